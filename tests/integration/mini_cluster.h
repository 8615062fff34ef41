// MiniCluster: a real WattDB cluster for tests — one wattdb-master and N wattdb-node
// processes on loopback, in a private temporary directory with free ports. Talks SQL to the
// master through libpq. Not thread-safe, except PgConn objects (one per thread).
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <libpq-fe.h>

namespace wattdb::testing {

// One libpq connection.
class PgConn {
 public:
  explicit PgConn(const std::string& conninfo);
  ~PgConn();
  bool ok() const;
  std::string error() const;
  // Runs `sql`; on success fills rows (text values, "NULL" for nulls) and returns "" ;
  // on failure returns the SQLSTATE (and the message in *message).
  std::string Exec(const std::string& sql, std::vector<std::vector<std::string>>* rows = nullptr,
                   std::string* message = nullptr);
  // Runs `sql` as a prepared statement (prepared on this connection's first use of it) with
  // text `params`; the SQLSTATE and rows as Exec's.
  std::string ExecPrepared(const std::string& sql, const std::vector<std::string>& params,
                           std::string* message = nullptr,
                           std::vector<std::vector<std::string>>* rows = nullptr);
  // Runs a query that must succeed and return exactly one value.
  std::string Scalar(const std::string& sql);
  // The command tag of the last Exec that succeeded ("UPDATE 1"), else "".
  const std::string& tag() const { return tag_; }

 private:
  PGconn* conn_;
  std::string tag_;
  std::map<std::string, std::string> prepared_;  // sql -> statement name
};

// Moves `amount` from account `from` to account `to` of table acc(id, balance) in one
// transaction block (rolled back if a statement fails). Returns "" if it committed, else the
// SQLSTATE (and the message in *message).
std::string Transfer(PgConn& c, int from, int to, int amount, std::string* message = nullptr);

// Runs `cmd` through the shell with stderr merged into stdout; returns its exit status
// (-1 if it could not start) and its output in *out.
int RunCommand(const std::string& cmd, std::string* out);
// The scheduler state of process `pid` from /proc/<pid>/stat ('R', 'S', 'T' when stopped,
// ...), or 0 if it cannot be read.
char ProcState(pid_t pid);
// Waits up to `timeout_ms` (looking every 10 ms) for process `pid` to reach state `want`.
bool AwaitProcState(pid_t pid, char want, int timeout_ms);
// A loopback TCP port nobody listens on right now.
int FreeTcpPort();
// GET http://127.0.0.1:port/path: the body; *status 0, or 3 on an HTTP error.
std::string HttpGet(int port, const std::string& path, int* status);
// The value of sample `name` (no labels) in Prometheus text `text`; -1 if absent.
double MetricValue(const std::string& text, const std::string& name);

struct MiniClusterOptions {
  int nodes = 3;
  uint64_t segment_bytes = 64 << 10;
  int telemetry_interval_ms = 300;
  bool balance = true;  // spread split-off segments (wattdb-master --no-balance if false)
  int latch_wait_ms = 10000;
  // 0: every fragment scan reads (and after a write first rebuilds) its segment's column
  // image, so that tests exercise images as much as possible.
  int column_cache_quiet_ms = 0;
  std::string extra_toml;    // appended to the generated config (e.g. an [auth] section)
  std::string master_toml;   // more keys of the [master] section
  std::string cluster_toml;  // more keys of the [cluster] section
  std::map<int, std::string> node_toml;  // more keys of node n's [[node]] table
  std::string password;                  // for conninfo(), when the config requires one
  // The master starts its nodes (wattdb-master --manage-nodes, local power driver) and
  // restarts those that die; the harness starts none.
  bool manage_nodes = false;
  // Nonzero: this node lives in the master process (power = "master"); the harness starts no
  // process for it.
  int hosted_node = 0;
  // The energy policy (written to policy.toml, named by [master] energy_policy). Tests that
  // do not test the controller keep every node where they put it.
  std::string policy = "mode = \"manual\"\n";
};

class MiniCluster {
 public:
  explicit MiniCluster(MiniClusterOptions opts = {});
  ~MiniCluster();

  // Starts nodes and the master and waits until every node is registered.
  bool Start();
  bool StartMaster();
  void StopMaster();  // SIGTERM, wait
  void KillAll();
  std::string conninfo() const;
  std::unique_ptr<PgConn> Connect() const;
  const std::string& dir() const { return dir_; }
  void KeepDir() { keep_dir_ = true; }  // the directory outlives the cluster (for a failure report)
  int pg_port() const { return pg_port_; }
  // Arms a failpoint in whichever process reaches it first (see common/failpoint.h).
  void ArmFailpoint(const std::string& name);
  // Restarts node processes that exited; returns how many were restarted.
  int RestartDeadNodes();
  // Waits up to `timeout_ms` for a node process started here to exit; returns its id (0: none
  // did). It stays down until RestartDeadNodes.
  int WaitForDeadNode(int timeout_ms);
  bool MasterAlive();
  // Sends `sig` to the master (SIGKILL: waits until it is gone).
  void SignalMaster(int sig);
  // The pid of node `id`'s running process (from its pid file), or 0.
  pid_t NodePid(int id) const;
  // Waits until `sql` returns `expected` as a scalar (for asynchronous state changes).
  bool WaitFor(const std::string& sql, const std::string& expected, int timeout_ms);
  // The lines of the processes' logs that contain `needle`, each after its file's name.
  std::string LogLines(const std::string& needle) const;

 private:
  pid_t Spawn(const std::vector<std::string>& args, const std::string& log);
  static int FreePort();
  // Picks ports and writes the cluster's config file.
  void WriteConfig();
  // True if a process of this cluster logged that its port was already in use.
  bool PortWasTaken() const;

  MiniClusterOptions opts_;
  std::string dir_, config_;
  bool keep_dir_ = false;  // Start failed or KeepDir(): keep the logs
  int pg_port_ = 0;
  pid_t master_ = 0;
  std::vector<pid_t> nodes_;  // 0: in the master process; -1: exited (reaped)
};

}  // namespace wattdb::testing
