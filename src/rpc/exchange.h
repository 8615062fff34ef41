// ExchangeSource: the rows of an Exchange's fragment (query/plan/fragment.h), run on the
// nodes owning the segments of its scan's key range (the master's exchanges, and those of a
// plan a helper node runs for it). Segments run in parallel, a few at a
// time, each into a bounded prefetch buffer (the paper's buffering operator), and their
// outputs are read in key order, so the rows come in the order the fragment run on the
// master would give them. Once a streaming segment is the one the consumer reads, the
// consumer takes its stream over from the producer and reads the rest itself. A segment that moved
// or split meanwhile is looked up again and resumed after the last key read; a fragment that
// aggregates or sorts holds a segment's output until it is complete, and runs the segment again if
// it failed midway. A range within one segment (a point query, most short statements) is read by
// the consumer itself: no producer thread, no hand-off.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "query/exec/context.h"
#include "rpc/node_client.h"
#include "rpc/scan_stream.h"

namespace wattdb::rpc {

struct ExchangeOptions {
  Timestamp read_ts = 0;
  uint64_t txn = 0;      // nonzero: the nodes overlay its pending writes
  int64_t work_mem = 0;  // per sort or hash table on the nodes
  bool prefetch = true;  // false: one segment at a time, read by the consumer off the wire
  const std::atomic<bool>* cancel = nullptr;
  exec::RemoteStats* stats = nullptr;  // EXPLAIN ANALYZE: the nodes' operator counters go here
  // The fragment keeps its parameters ($n): their values, sent with it; borrowed.
  const std::vector<Value>* params = nullptr;
  // Set: the key range read instead of the fragment's scan's (exec::ExecContext::exchange_range).
  const std::pair<std::string, std::string>* range = nullptr;
  // Follower reads (docs/design/replication.md): a segment may be read on any live copy the
  // map offers (PartMap::ReadFrom), falling back to its leader where that copy cannot answer.
  // Requires txn == 0: a follower holds no transaction's pending writes.
  bool follower_reads = false;
  // Set by the exchange for RunLocal: nonzero, the local copy is read as a follower in this
  // epoch (the node checks it may answer).
  uint64_t follower_epoch = 0;
};

// Where a table's segments are, as the exchange's reader knows it.
struct SegmentPlace {
  SegmentId id = 0;
  NodeId node = 0;
  std::string lo, hi;             // key range ("" = unbounded)
  uint64_t epoch = 0;             // of its replica set
  std::vector<NodeId> followers;  // its live followers (each holds every acknowledged commit)
};
// [lo, hi) narrowed to a segment's [seg_lo, seg_hi) ("" = unbounded, at either end).
std::pair<std::string, std::string> WithinSegment(const std::string& lo, const std::string& hi,
                                                  const std::string& seg_lo,
                                                  const std::string& seg_hi);

class PartMap {
 public:
  virtual ~PartMap() = default;
  // The segments of `table` overlapping [lo, hi), in key order.
  virtual std::vector<SegmentPlace> Segments(TableId table, const std::string& lo,
                                             const std::string& hi) = 0;
  virtual Result<std::shared_ptr<NodeClient>> Client(NodeId node) = 0;
  // The copy a follower read of `s` goes to: its leader (s.node) or one of its followers.
  virtual NodeId ReadFrom(const SegmentPlace& s) { return s.node; }
  // False: the map is a copy that cannot be read again, so a moved or split segment fails
  // the exchange (Stale) instead of being looked up afresh.
  virtual bool Refreshable() const { return true; }
  // Node CPU the nodes reported, told on the consumer's thread.
  virtual void BookCpu(NodeId node, uint64_t cpu_nanos) {}
  // CPU this process spent for the reader on other threads (read-ahead, a Gather's parts),
  // told on the consumer's thread.
  virtual void BookOtherThreadsCpu(uint64_t cpu_nanos) {}
  // True if this process owns `node`'s segments: RunLocal reads them, not a stream.
  virtual bool IsLocal(NodeId node) const { return false; }
  // Runs `fragment` over [lo, hi) of local segment `seg` at the reader's snapshot, each
  // output batch to `emit` (which may take it); fails as a node's scan would (NotFound: the
  // segment is gone).
  // `stats` (if given) receives the fragment's operator counters in its pre-order.
  virtual Status RunLocal(SegmentId seg, const std::string& lo, const std::string& hi,
                          const plan::PlanNode& fragment, const ExchangeOptions& opts,
                          const std::function<Status(exec::Batch&)>& emit,
                          std::vector<exec::OperatorStats>* stats) {
    return Status::NotSupported("no local segments");
  }
};

// The segments of a node that lives in the reader's process (the master node of the
// paper, which holds data itself): fragments over them run on the reader's thread, as
// PartMap::RunLocal does. Thread-safe.
class LocalSegments {
 public:
  virtual ~LocalSegments() = default;
  virtual NodeId node_id() const = 0;
  // As PartMap::RunLocal.
  virtual Status RunLocal(SegmentId seg, const std::string& lo, const std::string& hi,
                          const plan::PlanNode& fragment, const ExchangeOptions& opts,
                          const std::function<Status(exec::Batch&)>& emit,
                          std::vector<exec::OperatorStats>* stats) = 0;
};

class ExchangeSource : public exec::RowSource {
 public:
  using Options = ExchangeOptions;
  static constexpr size_t kMaxInFlight = 4;  // segments streaming at once
  // Prefetch buffer per segment: 8,192 rows (two batches), as much as before batches grew.
  static constexpr size_t kBufferedBatches = 2;

  // `map` is borrowed and outlives the source.
  static Result<std::unique_ptr<ExchangeSource>> Open(PartMap& map, const plan::PlanNode& exchange,
                                                      Options opts);
  ~ExchangeSource() override;  // stops and joins the producers
  Result<bool> Next(exec::Batch& out) override;
  // Streams the consumers of this process took over from their producers, ever.
  static uint64_t StreamsTakenOver() { return taken_over_.load(std::memory_order_relaxed); }

 private:
  // Reads the fragment's output over one key range, segment by segment, batch by batch.
  class PartReader {
   public:
    PartReader(ExchangeSource& x, std::string lo, std::string hi)
        : x_(x), cursor_(std::move(lo)), hi_(std::move(hi)) {}
    // The next batch with rows (true), or the end of the range (false).
    Result<bool> Next(exec::Batch* out);

   private:
    ExchangeSource& x_;
    std::string cursor_, hi_;  // what is left to read: [cursor_, hi_)
    int retries_ = 0;
    SegmentPlace seg_;          // the segment the stream reads
    NodeId node_ = 0;           // the node read: seg_'s leader, or a follower (follower reads)
    bool leader_only_ = false;  // a follower could not answer for seg_: its leader reads it
    std::unique_ptr<ScanStream> stream_;
    std::vector<exec::Batch> pending_;  // blocking fragments: the segment's output so far
    std::deque<exec::Batch> ready_;     // blocking fragments: a complete segment's output
    bool finished_ = false;
  };
  struct Part {
    std::string lo, hi;  // key range ("" = unbounded)
    std::deque<exec::Batch> batches;
    bool done = false;
    Status error;
    // Its producer waits here for room in `batches` (woken by the consumer only when the
    // buffer was full: no wake-ups of every producer on every batch).
    std::unique_ptr<CondVar> space = std::make_unique<CondVar>();
    // Handed over by the producer once this part is the one the consumer reads (streaming
    // fragments); then only the consumer touches it.
    std::unique_ptr<PartReader> reader;
  };
  ExchangeSource(PartMap& map, Options opts) : map_(map), opts_(opts) {}
  void Produce();
  // Runs the fragment over part i's range, each batch into the part's buffer (waits while it
  // is full), until its end, a stop, or (`*handed`) the part became the consumer's and its
  // reader went to the consumer with its latest batch; returns its final status.
  Status RunPart(size_t i, bool* handed);
  // On the consumer's thread: tells the map the node CPU reported so far, and the producers'
  // own.
  void BookNodeCpu() REQUIRES(mu_);
  // Adds a segment's operator counters (the fragment's pre-order) to `node`'s sums.
  void AddNodeStats(NodeId node, const std::vector<exec::OperatorStats>& stats);
  void AddNodeStatsLocked(NodeId node, const std::vector<exec::OperatorStats>& stats) REQUIRES(mu_);

  static inline std::atomic<uint64_t> taken_over_{0};
  PartMap& map_;
  Options opts_;
  TableId table_ = 0;
  size_t ncols_ = 0;       // of the fragment's output
  bool blocking_ = false;  // the fragment aggregates or sorts
  // Made by Open; each part's fields but its range are under mu_.
  std::vector<Part> parts_;
  // Running on the shared thread cache, counted under mu_; the last to end notifies ended_.
  size_t producers_ = 0;
  std::unique_ptr<PartReader> inline_;  // one part, or no prefetch: read by Next itself

  Mutex mu_;
  CondVar cv_;                            // the consumer waits here for the current part's batches
  CondVar ended_;                         // the destructor waits here for the producers to end
  CondVar window_;                        // producers wait here to take a part (or to stop)
  size_t next_part_ GUARDED_BY(mu_) = 0;  // the next part a producer takes
  size_t current_ GUARDED_BY(mu_) = 0;    // the part the consumer reads
  bool stop_ GUARDED_BY(mu_) = false;
  // Node CPU reported, not yet booked to the statement.
  std::map<NodeId, uint64_t> cpu_ GUARDED_BY(mu_);
  uint64_t producer_cpu_ GUARDED_BY(mu_) = 0;  // the producers' thread CPU, not yet booked
  // Summed over segments.
  std::map<NodeId, std::vector<exec::OperatorStats>> node_stats_ GUARDED_BY(mu_);
  // Borrowed; the plan outlives the source. Nodes of other processes get its encoding
  // (PlanNode::Encoded: made once per plan, when the first of them is read).
  const plan::PlanNode* fragment_root_ = nullptr;
};

}  // namespace wattdb::rpc
