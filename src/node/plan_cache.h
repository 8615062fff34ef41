// Decoded plans by their serialized bytes, so that a prepared statement's plan, sent with
// each execution, is decoded once (plan/key_update.h's templates: a plan that keeps its $n,
// run with each execution's values). Keyed by the whole bytes, so a stale entry can never
// answer for a different plan; bounded by count (a full cache starts over).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "query/plan/plan.h"

namespace wattdb::node {

class PlanCache {
 public:
  explicit PlanCache(size_t capacity = 1024) : capacity_(capacity) {}

  // The plan `bytes` decode to; Corruption if they do not (nothing is kept then).
  Result<std::shared_ptr<const plan::PlanNode>> Get(std::string_view bytes);

  size_t size() const;
  uint64_t decodes() const;  // plans decoded (cache misses) so far

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  const size_t capacity_;
  mutable Mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const plan::PlanNode>, Hash, std::equal_to<>>
      plans_ GUARDED_BY(mu_);
  uint64_t decodes_ GUARDED_BY(mu_) = 0;
};

// The plan of a request: `bytes` decoded, or, when parameter values come with it (`params`
// set: a plan that keeps its $n, a prepared statement's, sent again and again), from `cache`
// with the values decoded into *values. Corruption if either does not decode.
Result<std::shared_ptr<const plan::PlanNode>> RequestPlan(PlanCache& cache, std::string_view bytes,
                                                          const std::string_view* params,
                                                          std::vector<Value>* values);

}  // namespace wattdb::node
