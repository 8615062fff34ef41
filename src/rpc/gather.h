// GatherSource: the rows of a Gather (query/plan/plan.h) -- operators over one Exchange, run
// once per segment of that Exchange's key range on threads of this process, up to
// kMaxInFlight segments at once. Each part's Exchange reads only its segment's range,
// straight off the wire, and the part runs to its end before its output is read (a partial
// aggregate: a few rows for a segment's thousands). The consumer reads the parts' outputs in
// key order. A part whose segment moved or split meanwhile is still read whole (its Exchange
// looks the range up again); the first part to fail fails the Gather.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "query/exec/context.h"
#include "rpc/exchange.h"

namespace wattdb::rpc {

class GatherSource : public exec::RowSource {
 public:
  // Parts running at once: as many segments as the exchange streams (two were slower: remote
  // scan of 2M rows 5.9-6.7 ms a query with four, 7.4-7.8 ms with two).
  static constexpr size_t kMaxInFlight = ExchangeSource::kMaxInFlight;

  // `map` is borrowed and outlives the source; `opts.prefetch` is ignored (each part reads
  // its own segment's range, itself); `opts.range`, if set, narrows the Gather's. `ctx` is
  // the statement's, and outlives the source: its local_stats (if set) receive the counters
  // of the subtree's operators above the Exchange when the source is destroyed, its
  // remote_stats those of the nodes below. Null if the range has fewer than two segments:
  // then the subtree is best run in place.
  static Result<std::unique_ptr<GatherSource>> Open(PartMap& map, const plan::PlanNode& gather,
                                                    ExchangeOptions opts,
                                                    const exec::ExecContext& ctx);
  ~GatherSource() override;  // stops and joins the parts running
  Result<bool> Next(exec::Batch& out) override;

 private:
  struct Part {
    std::string lo, hi;
    std::vector<exec::Batch> out;  // complete once `done`
    size_t next = 0;               // the next batch of `out` the consumer takes
    bool done = false;
  };
  class PartScans;
  class CountingMap;
  GatherSource(PartMap& map, const plan::PlanNode& gather, ExchangeOptions opts,
               const exec::ExecContext& ctx);
  void Work();
  // Runs the subtree over part i's range into `out`.
  Status RunPart(size_t i, std::vector<exec::Batch>* out);
  void BookCpuLocked() REQUIRES(mu_);  // on the consumer's thread

  PartMap& map_;
  std::unique_ptr<CountingMap> counting_map_;  // map_, with the nodes' CPU reports kept here
  const plan::PlanNode& subtree_;              // the Gather's child; the plan outlives the source
  ExchangeOptions opts_;
  const exec::ExecContext& ctx_;  // the statement's
  bool counting_ = false;         // EXPLAIN ANALYZE
  std::vector<Part> parts_;
  size_t workers_ = 0;             // running on the shared thread cache
  std::atomic<bool> halt_{false};  // the parts' cancellation: the statement's, or the source's end

  Mutex mu_;
  CondVar cv_;                            // the consumer waits here for the current part
  CondVar window_;                        // workers wait here to take a part (or to stop)
  CondVar ended_;                         // the destructor waits here for the workers to end
  size_t next_part_ GUARDED_BY(mu_) = 0;  // the next part a worker takes
  size_t current_ GUARDED_BY(mu_) = 0;    // the part the consumer reads
  bool stop_ GUARDED_BY(mu_) = false;
  Status error_ GUARDED_BY(mu_);  // the first part's failure
  // Reported by the nodes, not yet booked.
  std::map<NodeId, uint64_t> node_cpu_ GUARDED_BY(mu_);
  uint64_t own_cpu_ GUARDED_BY(mu_) = 0;  // the workers' thread CPU, not yet booked
  // The subtree's operators in pre-order, summed.
  std::vector<exec::OperatorStats> op_stats_ GUARDED_BY(mu_);
  exec::RemoteStats remote_stats_ GUARDED_BY(mu_);  // the nodes' counters, summed over the parts
};

}  // namespace wattdb::rpc
