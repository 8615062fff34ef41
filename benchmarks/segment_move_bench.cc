// wattdb-move-bench: how long a physiological segment move takes next to a plain copy of
// the same files.
//
// Two real node servers on loopback (separate RocksDB instances, real TCP). One segment is
// filled with `--mb` megabytes, then moved back and forth with PullSegment — the exact path
// of ALTER TABLE ... MOVE SEGMENT: export the column family on the source, ship the SST files
// over TCP, import them on the target. The baseline copies the very same exported files
// from one directory to another with fsync (what `cp` + `sync` does), on the same disk.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>

#include <boost/program_options.hpp>

#include "common/cli.h"
#include "common/codec.h"
#include "common/logging.h"
#include "master/nodes/node_rpc.h"
#include "node/node_server.h"
#include "proto/node_service.capnp.h"
#include "rpc/node_client.h"

namespace fs = std::filesystem;
namespace po = boost::program_options;
using namespace wattdb;

namespace {

double Ms(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Receives an export of `seg` from a node into `dir` (as a target node would).
Status FetchExport(uint16_t port, SegmentId seg, const std::string& dir, uint64_t* bytes,
                   const net::ClusterKey& key) {
  net::asio::io_context io;
  ASSIGN_OR_RETURN(auto conn, net::Connection::Connect(io, "127.0.0.1", port));
  RETURN_NOT_OK(conn->Authenticate(key, net::Connection::Role::kClient, 2000));
  capnp::MallocMessageBuilder mb;
  mb.initRoot<proto::Request>().setExportSegment(seg);
  RETURN_NOT_OK(conn->Send(mb));
  ASSIGN_OR_RETURN(auto msg, conn->Receive());
  auto resp = msg->Root<proto::Response>();
  if (resp.getStatus().getCode() != 0) return Status::IOError(resp.getStatus().getMessage());
  fs::create_directories(dir);
  std::string chunk;
  *bytes = 0;
  for (auto f : resp.getSegmentExport().getFiles()) {
    std::ofstream out(dir + "/" + std::string(f.getName()), std::ios::binary);
    for (uint64_t left = f.getSize(); left > 0; left -= chunk.size()) {
      RETURN_NOT_OK(conn->ReceiveRaw(&chunk));
      out.write(chunk.data(), chunk.size());
    }
    *bytes += f.getSize();
  }
  return Status::OK();
}

// Plain copy of every file in `from` to `to`, each fsynced.
double CopyWithFsync(const std::string& from, const std::string& to) {
  fs::remove_all(to);
  fs::create_directories(to);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<char> buf(1 << 20);
  for (auto& e : fs::directory_iterator(from)) {
    int in = open(e.path().c_str(), O_RDONLY);
    int out =
        open((to + "/" + e.path().filename().string()).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ssize_t n;
    while ((n = read(in, buf.data(), buf.size())) > 0) {
      if (write(out, buf.data(), n) != n) break;
    }
    fsync(out);
    close(in);
    close(out);
  }
  return Ms(t0, std::chrono::steady_clock::now());
}

}  // namespace

int main(int argc, char** argv) {
  po::options_description desc("wattdb-move-bench: segment move vs. plain file copy\n\nOptions");
  desc.add_options()("help,h", "show this help")("mb", po::value<int>()->default_value(32),
                                                 "segment size in MiB")(
      "runs", po::value<int>()->default_value(5), "moves (and copies) to time")(
      "dir", po::value<std::string>()->default_value(""),
      "scratch directory (default: under /tmp)");
  po::variables_map vm;
  if (auto exit_code = ParseCommandLine("wattdb-move-bench", argc, argv, desc, &vm))
    return *exit_code;
  ConfigureLogging("error", "bench");
  int mb = vm["mb"].as<int>(), runs = vm["runs"].as<int>();
  std::string dir = vm["dir"].as<std::string>();
  if (dir.empty())
    dir = (fs::temp_directory_path() / fmt::format("wattdb_move_bench_{}", getpid())).string();
  fs::remove_all(dir);

  std::unique_ptr<node::NodeServer> nodes[2];
  for (int i = 0; i < 2; i++) {
    node::NodeOptions o;
    o.self.id = i + 1;
    o.self.port = 0;
    o.data_dir = fmt::format("{}/n{}", dir, i + 1);
    o.master_host = "127.0.0.1";
    o.master_port = 1;  // no master: the link retries quietly in the background
    o.key_file = dir + "/cluster.key";
    nodes[i] = std::make_unique<node::NodeServer>(o);
    Status s = nodes[i]->Start();
    if (!s.ok()) {
      std::cerr << s.ToString() << "\n";
      return 1;
    }
  }
  auto key = net::ClusterKey::LoadOrCreate(dir + "/cluster.key");
  if (!key.ok()) {
    std::cerr << key.status().ToString() << "\n";
    return 1;
  }
  rpc::NodeClientOptions copts;
  copts.key = &*key;
  rpc::NodeClient c1(1, "127.0.0.1", nodes[0]->port(), copts),
      c2(2, "127.0.0.1", nodes[1]->port(), copts);
  rpc::NodeClient* clients[2] = {&c1, &c2};
  const SegmentId seg = 7;
  if (!master::RpcCreateSegment(c1, seg, 1, "", "").ok()) return 1;
  // Fill: 320-byte pseudo-random payloads (incompressible, so the on-disk size is the
  // segment size), as in the platform measurement of a 32 MB column family.
  std::string pad(320, 'x');
  uint64_t rng = 88172645463325252ull;
  uint64_t target = static_cast<uint64_t>(mb) << 20, written = 0;
  int64_t id = 0;
  auto tf = std::chrono::steady_clock::now();
  for (uint64_t txn = 1; written < target; txn++) {
    std::vector<master::RemoteWrite> ws;
    for (int i = 0; i < 2000; i++, id++) {
      master::RemoteWrite w;
      w.segment = seg;
      EncodeKeyValue(Value::Int64(id), &w.key);
      for (auto& ch : pad) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        ch = static_cast<char>(rng & 0xff);
      }
      EncodeRow({Value::Int64(id), Value::Text(pad)}, &w.row);
      written += w.key.size() + w.row.size() + 9;
      ws.push_back(std::move(w));
    }
    if (!master::RpcPrepare(c1, txn, 0, ws).ok() || !master::RpcCommit(c1, txn, txn).ok()) return 1;
  }
  std::cout << fmt::format("filled segment: {} rows, ~{} MiB logical, {:.0f} ms\n", id,
                           written >> 20, Ms(tf, std::chrono::steady_clock::now()));

  std::vector<double> moves, pulls, copies;
  uint64_t bytes = 0;
  int at = 0;  // node index holding the segment
  for (int r = 0; r < runs; r++) {
    int to = 1 - at;
    auto t0 = std::chrono::steady_clock::now();
    auto pulled = master::RpcPull(*clients[to], seg, "127.0.0.1", nodes[at]->port());
    auto t1 = std::chrono::steady_clock::now();
    if (!pulled.ok()) {
      std::cerr << "move failed: " << pulled.status().ToString() << "\n";
      return 1;
    }
    (void)master::RpcDropSegment(*clients[at], seg);
    moves.push_back(Ms(t0, t1));
    pulls.push_back(pulled->micros / 1000.0);
    bytes = pulled->bytes;
    at = to;
    // Baseline on the same bytes: fetch the export once, then copy those files.
    std::string src = fmt::format("{}/export_{}", dir, r);
    uint64_t b = 0;
    if (!FetchExport(nodes[at]->port(), seg, src, &b, *key).ok()) return 1;
    copies.push_back(CopyWithFsync(src, dir + "/copy"));
    fs::remove_all(src);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::cout << fmt::format("segment bytes on disk: {} ({:.1f} MiB)\n", bytes, bytes / 1048576.0);
  std::cout << "run  move_ms  copy_ms\n";
  for (int r = 0; r < runs; r++)
    std::cout << fmt::format("{:>3}  {:>7.1f}  {:>7.1f}\n", r + 1, moves[r], copies[r]);
  double m = median(moves), cp = median(copies);
  std::cout << fmt::format(
      "median move {:.1f} ms ({:.0f} MiB/s), plain copy+fsync {:.1f} ms; move/copy = {:.2f}\n", m,
      bytes / 1048576.0 / (m / 1000), cp, m / cp);
  for (auto& n : nodes) n->Stop();
  fs::remove_all(dir);
  return 0;
}
