// Operator offloading on the master's side: which node helps (from its telemetry), and the
// rows of an Offload's subtree (query/plan/offload.h) as that helper node streams them. The
// helper gets the subtree and, for each of its Exchanges, the segments of the Exchange's scan
// range with their owners' addresses; it reads them from the owners itself.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "master/cluster/cluster.h"
#include "master/sql/remote_plan.h"
#include "query/exec/context.h"

namespace wattdb::master {

// wattdb_offload: kOff plans no Offload nodes; kAuto offloads when the master is busy and a
// node is nearly idle; kOn always offloads (to the least loaded node); kNode to that node.
struct OffloadSetting {
  enum class Mode { kOff, kAuto, kOn, kNode } mode = Mode::kAuto;
  NodeId node = 0;
  // "off", "auto", "on" or a node id; InvalidArgument (22023) otherwise.
  static Result<OffloadSetting> Parse(const std::string& s);
};

struct HelperCandidate {
  NodeId id = 0;
  double cpu_percent =
      0;            // the node process's CPU over its last telemetry interval (100 = one core)
  int running = 0;  // offloaded subtrees it is running for this master now
};
// An automatic choice needs the master this busy (share of the CPU it may use, over about the
// last second) ...
constexpr double kMasterBusyShare = 0.8;
// ... and a helper whose load (CPU in cores + running offloads) is below this.
constexpr double kIdleHelperLoad = 0.5;
// The helper for an Offload: the forced node if it is a candidate, else the candidate with the
// least load (ties: the lower id); 0 = run on the master (kAuto: unless the master is busy and
// that candidate nearly idle).
NodeId ChooseHelper(const std::vector<HelperCandidate>& nodes, const OffloadSetting& s,
                    double master_share);

// The master process's CPU use as a share of CpuCapacity(), over at least the last half second.
double MasterShare();
// The cores this process may use: the machine's, or fewer if its cgroup's CPU quota says so.
double CpuCapacity();

class OffloadSource : public exec::RowSource {
 public:
  struct Options {
    Timestamp read_ts = 0;
    uint64_t txn = 0;
    int64_t work_mem = 0;
    OffloadSetting setting;
    const std::atomic<bool>* cancel = nullptr;
    exec::RemoteStats* stats = nullptr;  // EXPLAIN ANALYZE: the helper's operator counters
  };
  // Null if no node is chosen (the subtree then runs on the master).
  static Result<std::unique_ptr<OffloadSource>> Open(Cluster& cluster,
                                                     const plan::PlanNode& offload, Options opts);
  ~OffloadSource() override;
  Result<bool> Next(exec::Batch& out) override;

 private:
  OffloadSource(QueryCounters& counters, const plan::PlanNode& offload, Options opts)
      : counters_(counters), offload_(offload), opts_(opts) {}
  QueryCounters& counters_;
  const plan::PlanNode& offload_;
  Options opts_;
  NodeId helper_ = 0;
  std::unique_ptr<RemotePlan> remote_;
  bool done_ = false;
  bool failed_ = false;  // the helper or the link to it failed
  uint64_t rows_ = 0, batches_ = 0;
  double ms_ = 0;
};

}  // namespace wattdb::master
