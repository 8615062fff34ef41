// Runs a plan fragment (query/plan/fragment.h) over the rows of one segment that a scan
// request sees: the fragment's leaf Scan reads them, decoded straight into typed batches.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "node/segment_rows.h"
#include "query/exec/batch.h"
#include "query/exec/context.h"

namespace wattdb::node {

struct FragmentOptions {
  int64_t work_mem = 0;  // per materializing operator; 0 = unbounded
  const std::atomic<bool>* cancel = nullptr;
  // Polled before each batch the scan reads: true once the reader went away (the fragment
  // then ends with 57014 instead of finishing work nobody will read).
  std::function<bool()> hung_up;
  // The values of the plan's parameters when it keeps them ($n); borrowed.
  const std::vector<Value>* params = nullptr;
};

// Calls `emit` for each non-empty output batch (which it may take, as Execute's sink may)
// with the last primary key read so far (all
// rows up to it are accounted for in what was emitted); `stats` receives each operator's
// counters in the plan's pre-order. Corruption if `plan` does not decode or has no single
// Scan leaf.
Status RunFragment(std::string_view plan, SegmentRows& rows, const FragmentOptions& opts,
                   const std::function<Status(exec::Batch&, const std::string& resume_key)>& emit,
                   std::vector<exec::OperatorStats>* stats);
// The same for a plan already decoded (a fragment run in the process that planned it).
Status RunFragment(const plan::PlanNode& plan, SegmentRows& rows, const FragmentOptions& opts,
                   const std::function<Status(exec::Batch&, const std::string& resume_key)>& emit,
                   std::vector<exec::OperatorStats>* stats);

// For a plan of a Scan, a Filter over it, or a Project over either (a key write's): the rows
// RunFragment would yield, each with the last primary key read so far, as RunFragment runs
// such a plan: without building operators (a key's one row costs no operator tree).
// NotSupported for any other plan.
Status RunScanPlan(
    const plan::PlanNode& plan, SegmentRows& rows, const FragmentOptions& opts,
    const std::function<Status(std::vector<Value>&& row, const std::string& resume_key)>& emit);

}  // namespace wattdb::node
