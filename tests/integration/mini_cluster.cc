#include "tests/integration/mini_cluster.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>

namespace wattdb::testing {

std::string Transfer(PgConn& c, int from, int to, int amount, std::string* message) {
  std::string st;
  for (const std::string& q :
       {std::string("BEGIN"),
        fmt::format("UPDATE acc SET balance = balance - {} WHERE id = {}", amount, from),
        fmt::format("UPDATE acc SET balance = balance + {} WHERE id = {}", amount, to),
        std::string("COMMIT")}) {
    st = c.Exec(q, nullptr, message);
    if (!st.empty()) break;
  }
  if (!st.empty()) (void)c.Exec("ROLLBACK");
  return st;
}

char ProcState(pid_t pid) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string line;
  std::getline(stat, line);
  auto close = line.rfind(')');  // the state follows the command name
  return close != std::string::npos && close + 2 < line.size() ? line[close + 2] : 0;
}

bool AwaitProcState(pid_t pid, char want, int timeout_ms) {
  for (int waited = 0; waited < timeout_ms; waited += 10) {
    if (ProcState(pid) == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

int RunCommand(const std::string& cmd, std::string* out) {
  out->clear();
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) out->append(buf, n);
  int rc = pclose(p);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

namespace fs = std::filesystem;

PgConn::PgConn(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str())) {
  PQsetNoticeProcessor(
      conn_, [](void*, const char*) {}, nullptr);
}
PgConn::~PgConn() { PQfinish(conn_); }
bool PgConn::ok() const { return PQstatus(conn_) == CONNECTION_OK; }
std::string PgConn::error() const { return PQerrorMessage(conn_); }

namespace {

// A result's rows as text, NULL as "NULL".
void ReadRows(PGresult* r, std::vector<std::vector<std::string>>* rows) {
  rows->clear();
  for (int i = 0; i < PQntuples(r); i++) {
    std::vector<std::string> row;
    for (int j = 0; j < PQnfields(r); j++)
      row.push_back(PQgetisnull(r, i, j) ? "NULL" : PQgetvalue(r, i, j));
    rows->push_back(std::move(row));
  }
}

}  // namespace

std::string PgConn::Exec(const std::string& sql, std::vector<std::vector<std::string>>* rows,
                         std::string* message) {
  PGresult* r = PQexec(conn_, sql.c_str());
  ExecStatusType st = PQresultStatus(r);
  std::string state;
  if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
    if (rows) ReadRows(r, rows);
    tag_ = PQcmdStatus(r);
  } else {
    const char* code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    state = code ? code : "?????";
    if (message)
      *message = PQresultErrorMessage(r) ? PQresultErrorMessage(r) : PQerrorMessage(conn_);
    tag_.clear();
  }
  PQclear(r);
  return state;
}

std::string PgConn::ExecPrepared(const std::string& sql, const std::vector<std::string>& params,
                                 std::string* message,
                                 std::vector<std::vector<std::string>>* rows) {
  auto error = [&](PGresult* r) {
    const char* code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    if (message)
      *message = PQresultErrorMessage(r) ? PQresultErrorMessage(r) : PQerrorMessage(conn_);
    std::string state = code ? code : "?????";
    PQclear(r);
    return state;
  };
  auto it = prepared_.find(sql);
  if (it == prepared_.end()) {
    std::string name = "s" + std::to_string(prepared_.size());
    PGresult* r = PQprepare(conn_, name.c_str(), sql.c_str(), 0, nullptr);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) return error(r);
    PQclear(r);
    it = prepared_.emplace(sql, name).first;
  }
  std::vector<const char*> values;
  for (const auto& p : params) values.push_back(p.c_str());
  PGresult* r = PQexecPrepared(conn_, it->second.c_str(), static_cast<int>(values.size()),
                               values.data(), nullptr, nullptr, 0);
  ExecStatusType st = PQresultStatus(r);
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) return error(r);
  if (rows) ReadRows(r, rows);
  PQclear(r);
  return "";
}

std::string PgConn::Scalar(const std::string& sql) {
  std::vector<std::vector<std::string>> rows;
  std::string msg;
  std::string st = Exec(sql, &rows, &msg);
  if (!st.empty()) return "ERROR " + st + ": " + msg;
  if (rows.size() != 1 || rows[0].size() != 1) return "BAD SHAPE";
  return rows[0][0];
}

// The built binaries; WATTDB_BIN_DIR in the environment points elsewhere (a long run can
// use a copy while the tree is rebuilt).
static std::string BinDir() {
  const char* env = getenv("WATTDB_BIN_DIR");
  return env && *env ? env : WATTDB_BIN_DIR;
}

MiniCluster::MiniCluster(MiniClusterOptions opts) : opts_(opts) {
  dir_ = (fs::temp_directory_path() /
          fmt::format("wattdb_cluster_{}_{}", getpid(),
                      std::chrono::steady_clock::now().time_since_epoch().count()))
             .string();
  fs::create_directories(dir_);
  WriteConfig();
}

void MiniCluster::WriteConfig() {
  const MiniClusterOptions& opts = opts_;
  pg_port_ = FreePort();
  int cluster_port = FreePort();
  std::string toml = fmt::format(
      "[cluster]\ndata_dir = \"{}/data\"\nsegment_bytes = {}\ntelemetry_interval_ms = {}\n"
      "heartbeat_timeout_ms = {}\nlatch_wait_ms = {}\ncolumn_cache_quiet_ms = {}\nnode_binary = "
      "\"{}/wattdb-node\"\n{}\n"
      "[master]\npg_port = {}\ncluster_port = {}\nenergy_policy = \"policy.toml\"\n",
      dir_, opts.segment_bytes, opts.telemetry_interval_ms, opts.telemetry_interval_ms * 10,
      opts.latch_wait_ms, opts.column_cache_quiet_ms, BinDir(), opts.cluster_toml, pg_port_,
      cluster_port);
  // One copy of each segment unless a test asks for more: the tests of replicas say so.
  if (opts.cluster_toml.find("replication_factor") == std::string::npos)
    toml.insert(toml.find("[master]"), "replication_factor = 1\n");
  toml += opts.master_toml + "\n" + opts.extra_toml + "\n";
  std::ofstream(dir_ + "/policy.toml") << opts.policy;
  for (int i = 1; i <= opts.nodes; i++) {
    toml += fmt::format("[[node]]\nid = {}\nport = {}\n", i, FreePort());
    if (i == opts.hosted_node) toml += "power = \"master\"\n";
    if (opts.node_toml.count(i)) toml += opts.node_toml.at(i) + "\n";
  }
  config_ = dir_ + "/cluster.toml";
  std::ofstream(config_) << toml;
}

std::string MiniCluster::LogLines(const std::string& needle) const {
  std::string out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (e.path().extension() != ".log") continue;
    std::ifstream f(e.path());
    std::string line;
    while (std::getline(f, line)) {
      if (line.find(needle) != std::string::npos)
        out += e.path().filename().string() + ": " + line + "\n";
    }
  }
  return out;
}

bool MiniCluster::PortWasTaken() const { return !LogLines("Address already in use").empty(); }

MiniCluster::~MiniCluster() {
  KillAll();
  std::error_code ec;
  if (!getenv("WATTDB_KEEP_TEST_DIR") && !keep_dir_) fs::remove_all(dir_, ec);
}

int MiniCluster::FreePort() {
  // A random port below the kernel's ephemeral range (32768+), so that outgoing connections
  // can never take it between this check and the server's bind; checked by binding it. A
  // port is handed out once per test process: the ports of one cluster differ (a config's
  // ports are all picked before any process binds one, so the bind check cannot tell them
  // apart), and a stopped cluster's ports are not given to the next while it may linger.
  static std::mt19937 rng(
      static_cast<unsigned>(getpid()) * 7919u +
      static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()));
  static std::mutex mu;
  static std::set<int> given;
  std::lock_guard<std::mutex> lock(mu);
  for (int attempt = 0; attempt < 1000; attempt++) {
    int port = 20000 + static_cast<int>(rng() % 12000);
    if (!given.insert(port).second) continue;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    close(fd);
    if (ok) return port;
  }
  return 0;
}

pid_t MiniCluster::Spawn(const std::vector<std::string>& args, const std::string& log) {
  pid_t pid = fork();
  if (pid == 0) {
    setsid();
    setenv("WATTDB_FAILPOINTS_FILE", (dir_ + "/failpoints").c_str(), 1);
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

bool MiniCluster::StartMaster() {
  std::vector<std::string> args = {BinDir() + "/wattdb-master", "--config", config_};
  if (!opts_.balance) args.push_back("--no-balance");
  if (opts_.manage_nodes) args.push_back("--manage-nodes");
  master_ = Spawn(args, dir_ + "/master.log");
  for (int i = 0; i < 300; i++) {
    PgConn c(conninfo());
    if (c.ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

bool MiniCluster::Start() {
  // A cluster that does not come up keeps its directory (logs) for the failure report. Ports
  // are picked at random, so another test may take one first: then start over on new ports.
  keep_dir_ = true;
  for (int attempt = 0; attempt < 3; attempt++) {
    if (attempt > 0) {
      KillAll();
      std::error_code ec;
      fs::remove_all(dir_ + "/data", ec);
      WriteConfig();
    }
    for (int i = 1; i <= opts_.nodes && !opts_.manage_nodes; i++) {
      if (i == opts_.hosted_node) {
        nodes_.push_back(0);  // in the master process
        continue;
      }
      nodes_.push_back(
          Spawn({BinDir() + "/wattdb-node", "--config", config_, "--id", std::to_string(i)},
                fmt::format("{}/node{}.log", dir_, i)));
    }
    if (StartMaster() && WaitFor("select count(*) from wattdb_nodes where state = 'up'",
                                 std::to_string(opts_.nodes), 30000)) {
      keep_dir_ = false;
      return true;
    }
    if (!PortWasTaken()) return false;
  }
  return false;
}

void MiniCluster::ArmFailpoint(const std::string& name) {
  std::ofstream(dir_ + "/failpoints") << name << "\n";
}

bool MiniCluster::MasterAlive() {
  if (!master_) return false;
  if (waitpid(master_, nullptr, WNOHANG) == master_) {
    master_ = 0;
    return false;
  }
  return true;
}

int MiniCluster::RestartDeadNodes() {
  int restarted = 0;
  for (size_t i = 0; i < nodes_.size(); i++) {
    if (nodes_[i] == 0) continue;
    if (nodes_[i] > 0 && waitpid(nodes_[i], nullptr, WNOHANG) != nodes_[i]) continue;
    nodes_[i] =
        Spawn({BinDir() + "/wattdb-node", "--config", config_, "--id", std::to_string(i + 1)},
              fmt::format("{}/node{}.log", dir_, i + 1));
    restarted++;
  }
  return restarted;
}

int MiniCluster::WaitForDeadNode(int timeout_ms) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  do {
    for (size_t i = 0; i < nodes_.size(); i++) {
      if (nodes_[i] > 0 && waitpid(nodes_[i], nullptr, WNOHANG) == nodes_[i]) {
        nodes_[i] = -1;
        return static_cast<int>(i + 1);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (std::chrono::steady_clock::now() < until);
  return 0;
}

void MiniCluster::SignalMaster(int sig) {
  if (!master_) return;
  kill(master_, sig);
  if (sig == SIGKILL) {
    waitpid(master_, nullptr, 0);
    master_ = 0;
  }
}

pid_t MiniCluster::NodePid(int id) const {
  std::ifstream f(fmt::format("{}/data/n{}/node.pid", dir_, id));
  pid_t p = 0;
  // A killed node not yet reaped by the master is a zombie: dead, though kill(p, 0) succeeds.
  if (!(f >> p) || p <= 0 || kill(p, 0) != 0 || ProcState(p) == 'Z') return 0;
  return p;
}

void MiniCluster::StopMaster() {
  if (!master_ || !MasterAlive()) return;
  kill(master_, SIGTERM);
  waitpid(master_, nullptr, 0);
  master_ = 0;
}

void MiniCluster::KillAll() {
  StopMaster();
  // Nodes started by the harness, and any the master's power driver started (pid files).
  std::vector<pid_t> pids;
  for (pid_t p : nodes_) {
    if (p > 0) pids.push_back(p);  // 0: a node in the master process (kill(0) would hit our group)
  }
  for (int i = 1; i <= opts_.nodes; i++) {
    if (i == opts_.hosted_node) continue;  // its pid file names the master
    std::ifstream f(fmt::format("{}/data/n{}/node.pid", dir_, i));
    pid_t p = 0;
    if (f >> p && p > 0) pids.push_back(p);
  }
  for (pid_t p : pids) {
    kill(p, SIGCONT);  // a test may have frozen it
    kill(p, SIGTERM);
  }
  for (pid_t p : nodes_) {
    if (p > 0) waitpid(p, nullptr, 0);
  }
  nodes_.clear();
  for (int i = 0; i < 200; i++) {
    bool alive = false;
    for (pid_t p : pids)
      alive |= kill(p, 0) == 0 && (waitpid(p, nullptr, WNOHANG), kill(p, 0) == 0);
    if (!alive) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  for (pid_t p : pids) kill(p, SIGKILL);
}

std::string MiniCluster::conninfo() const {
  return fmt::format(
      "host=127.0.0.1 port={} user=wattdb dbname=wattdb sslmode=disable connect_timeout=5{}",
      pg_port_, opts_.password.empty() ? "" : " password=" + opts_.password);
}

std::unique_ptr<PgConn> MiniCluster::Connect() const {
  return std::make_unique<PgConn>(conninfo());
}

bool MiniCluster::WaitFor(const std::string& sql, const std::string& expected, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    PgConn c(conninfo());
    if (c.ok() && c.Scalar(sql) == expected) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

int FreeTcpPort() {
  std::string out;
  RunCommand(
      "python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\", 0)); "
      "print(s.getsockname()[1])'",
      &out);
  return std::stoi(out);
}

std::string HttpGet(int port, const std::string& path, int* status) {
  std::string out;
  *status = RunCommand(
      fmt::format("python3 -c 'import urllib.request, urllib.error, sys\n"
                  "try:\n  sys.stdout.write(urllib.request.urlopen(\"http://127.0.0.1:{}{}\", "
                  "timeout=10).read().decode())\n"
                  "except urllib.error.HTTPError as e:\n  print(e.code); sys.exit(3)'",
                  port, path),
      &out);
  return out;
}

double MetricValue(const std::string& text, const std::string& name) {
  size_t p = text.find("\n" + name + " ");
  return p == std::string::npos ? -1.0 : std::stod(text.substr(p + name.size() + 2));
}

}  // namespace wattdb::testing
