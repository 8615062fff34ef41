#include "node/fragment_runner.h"

#include <algorithm>
#include <chrono>

#include "common/sqlstate.h"
#include "query/exec/eval_vector.h"
#include "query/exec/operator.h"
#include "query/exec/row_decode.h"
#include "query/plan/fragment.h"
#include "query/plan/plan.h"

namespace wattdb::node {

namespace {

constexpr size_t kFragmentScanBytes = 4u << 20;
// The least time between two looks for a reader that went away.
constexpr std::chrono::milliseconds kHangUpEvery{2};

// The segment's rows as the fragment's one scan.
class SegmentSource : public exec::RowSource {
 public:
  SegmentSource(SegmentRows& rows, std::string* last_key, std::vector<bool> used,
                const FragmentOptions& opts)
      : rows_(rows), last_key_(last_key), used_(std::move(used)), opts_(opts) {}
  Result<bool> Next(exec::Batch& out) override {
    // Not before the first batch: the request has only just arrived (a point read polls nothing);
    // then before a batch that begins kHangUpEvery or more after the last look (a look is a
    // system call: per batch it cost a fast scan 6-7 % of its CPU; a slow batch still looks
    // before each).
    if (calls_++ > 0 && opts_.hung_up && LookNow() && opts_.hung_up()) {
      return Status::Sql(sqlstate::kQueryCanceled, "canceling statement: its reader went away");
    }
    const std::vector<bool>* used = used_.empty() ? nullptr : &used_;
    if (rows_.columnar()) return rows_.NextBatch(used, &out, last_key_);
    while (out.rows == 0) {
      ASSIGN_OR_RETURN(bool more, rows_.Visit(exec::kBatchRows, kFragmentScanBytes,
                                              [&](std::string_view key, std::string_view row) {
                                                last_key_->assign(key);
                                                return exec::AppendEncodedRow(row, &out, used);
                                              }));
      if (!more) break;
    }
    if (used) exec::PadUnused(*used, &out);
    return out.rows > 0;
  }

 private:
  SegmentRows& rows_;
  std::string* last_key_;
  std::vector<bool> used_;  // columns the fragment reads (empty: all)
  const FragmentOptions& opts_;
  uint64_t calls_ = 0;
  std::chrono::steady_clock::time_point looked_{};  // the last look for a hang-up

  bool LookNow() {
    auto now = std::chrono::steady_clock::now();  // (the vDSO's clock: no system call)
    if (now - looked_ < kHangUpEvery) return false;
    looked_ = now;
    return true;
  }
};

class SegmentProvider : public exec::ScanProvider {
 public:
  SegmentProvider(SegmentRows& rows, std::string* last_key, std::vector<bool> used,
                  const FragmentOptions& opts)
      : rows_(rows), last_key_(last_key), used_(std::move(used)), opts_(opts) {}
  Result<std::unique_ptr<exec::RowSource>> OpenScan(const plan::PlanNode& scan) override {
    if (opened_) return Status::Corruption("plan fragment reads more than one scan");
    opened_ = true;
    return std::unique_ptr<exec::RowSource>(new SegmentSource(rows_, last_key_, used_, opts_));
  }

 private:
  SegmentRows& rows_;
  std::string* last_key_;
  std::vector<bool> used_;
  const FragmentOptions& opts_;
  bool opened_ = false;
};

// RunScanFragment's batches and selection, kept by its thread for the next run (their vectors
// keep their memory): a point read or a key-routed write runs it for one row, where allocating
// a batch's column vectors cost more than the row. A run inside a run (an emit that runs
// another) gets fresh ones.
struct ScanScratch {
  exec::Batch batch;
  exec::Batch filtered, projected;
  std::vector<uint32_t> sel;
};

class ScanScratchLease {
 public:
  ScanScratchLease() : s_(busy_ ? &own_ : &kept_) { busy_ = true; }
  ~ScanScratchLease() {
    if (s_ != &kept_) return;
    busy_ = false;
    if (most_rows_ > kKeepRows) kept_ = ScanScratch();
  }
  // A batch of `rows` was made: a run whose batches outgrew kKeepRows frees them at its end.
  void Saw(size_t rows) { most_rows_ = std::max(most_rows_, rows); }
  ScanScratchLease(const ScanScratchLease&) = delete;
  ScanScratchLease& operator=(const ScanScratchLease&) = delete;
  ScanScratch* operator->() { return s_; }

 private:
  static constexpr size_t kKeepRows = 256;  // a run that made more frees its memory after
  static thread_local ScanScratch kept_;
  static thread_local bool busy_;
  ScanScratch own_;
  ScanScratch* s_;
  size_t most_rows_ = 0;
};
thread_local ScanScratch ScanScratchLease::kept_;
thread_local bool ScanScratchLease::busy_ = false;

}  // namespace

Status RunFragment(std::string_view plan, SegmentRows& rows, const FragmentOptions& opts,
                   const std::function<Status(exec::Batch&, const std::string& resume_key)>& emit,
                   std::vector<exec::OperatorStats>* stats) {
  ASSIGN_OR_RETURN(plan::PlanPtr p, plan::PlanNode::Deserialize(plan));
  return RunFragment(*p, rows, opts, emit, stats);
}

// A plan that is a Scan, a Filter over it, or a Project over either: its nodes (project and
// filter null where absent). False for any other plan.
struct ScanPlanShape {
  const plan::PlanNode* project = nullptr;
  const plan::PlanNode* filter = nullptr;
  const plan::PlanNode* scan = nullptr;
};
bool MatchScanPlan(const plan::PlanNode& plan, ScanPlanShape* shape) {
  using K = plan::PlanNode::Kind;
  shape->project = plan.kind == K::kProject ? &plan : nullptr;
  const plan::PlanNode* below =
      shape->project
          ? (shape->project->children.size() == 1 ? shape->project->children[0].get() : nullptr)
          : &plan;
  shape->filter = below && below->kind == K::kFilter ? below : nullptr;
  shape->scan =
      shape->filter
          ? (shape->filter->children.size() == 1 ? shape->filter->children[0].get() : nullptr)
          : below;
  return shape->scan && shape->scan->kind == K::kScan &&
         (!shape->filter || shape->filter->predicate);
}

// A fragment of MatchScanPlan's shape, as its operators would run it (batches from the scan,
// a filter's selected rows gathered, the projection evaluated a column at a time; empty
// batches not emitted), without building them: a point read's fragment costs no operator
// tree. Its batches are its thread's (ScanScratchLease).
Status RunScanFragment(
    const plan::PlanNode& plan, const ScanPlanShape& shape, SegmentRows& rows,
    const FragmentOptions& opts,
    const std::function<Status(exec::Batch&, const std::string& resume_key)>& emit) {
  const plan::PlanNode* project = shape.project;
  const plan::PlanNode* filter = shape.filter;
  const plan::PlanNode* scan = shape.scan;
  std::string last_key;
  SegmentSource source(rows, &last_key, plan::UsedScanColumns(plan), opts);
  exec::ExecContext ctx(nullptr, opts.cancel);
  ctx.work_mem = opts.work_mem;
  ctx.params = opts.params;
  ScanScratchLease lease;
  exec::Batch& in = lease->batch;
  while (true) {
    RETURN_NOT_OK(exec::CheckCancel(ctx));  // as a scan operator looks before each batch
    in.Reset(scan->types.size());
    ASSIGN_OR_RETURN(bool more, source.Next(in));
    if (!more) return Status::OK();
    lease.Saw(in.rows);
    exec::Batch* cur = &in;
    if (filter) {
      ASSIGN_OR_RETURN(size_t n, exec::Select(*filter->predicate, in, &ctx, &lease->sel));
      if (n == 0) continue;
      if (n < in.rows) {
        exec::Batch& kept = lease->filtered;
        kept.Reset(in.cols.size());
        for (size_t c = 0; c < in.cols.size(); c++)
          kept.cols[c].Gather(in.cols[c], lease->sel.data(), n);
        kept.rows = n;
        cur = &kept;
      }
    }
    if (project) {
      exec::Batch& out = lease->projected;
      out.Reset(project->exprs.size());
      for (size_t c = 0; c < project->exprs.size(); c++) {
        RETURN_NOT_OK(exec::EvalVector(*project->exprs[c], *cur, &ctx, &out.cols[c]));
      }
      out.rows = cur->rows;
      cur = &out;
    }
    if (cur->rows > 0) RETURN_NOT_OK(emit(*cur, last_key));
  }
}

Status RunFragment(const plan::PlanNode& plan, SegmentRows& rows, const FragmentOptions& opts,
                   const std::function<Status(exec::Batch&, const std::string& resume_key)>& emit,
                   std::vector<exec::OperatorStats>* stats) {
  if (ScanPlanShape shape; !stats && MatchScanPlan(plan, &shape))
    return RunScanFragment(plan, shape, rows, opts, emit);
  std::string last_key;
  SegmentProvider provider(rows, &last_key, plan::UsedScanColumns(plan), opts);
  exec::ExecContext ctx(&provider, opts.cancel);
  ctx.work_mem = opts.work_mem;
  ctx.params = opts.params;
  return exec::Execute(
      plan, ctx, [&](exec::Batch& b) { return emit(b, last_key); }, stats);
}

Status RunScanPlan(
    const plan::PlanNode& plan, SegmentRows& rows, const FragmentOptions& opts,
    const std::function<Status(std::vector<Value>&& row, const std::string& resume_key)>& emit) {
  ScanPlanShape shape;
  if (!MatchScanPlan(plan, &shape))
    return Status::NotSupported("not a scan with a filter and a projection");
  // A batch's rows are emitted once all of them are made, as the operators emit batches.
  return RunScanFragment(plan, shape, rows, opts, [&](exec::Batch& b, const std::string& last_key) {
    for (size_t r = 0; r < b.rows; r++) RETURN_NOT_OK(emit(b.Row(r), last_key));
    return Status::OK();
  });
}

}  // namespace wattdb::node
