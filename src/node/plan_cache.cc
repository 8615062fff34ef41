#include "node/plan_cache.h"

#include "common/codec.h"

namespace wattdb::node {

Result<std::shared_ptr<const plan::PlanNode>> PlanCache::Get(std::string_view bytes) {
  {
    MutexLock l(mu_);
    auto it = plans_.find(bytes);
    if (it != plans_.end()) return it->second;
  }
  // Decoded outside the lock; two requests racing for one plan both decode it, one is kept.
  ASSIGN_OR_RETURN(plan::PlanPtr p, plan::PlanNode::Deserialize(bytes));
  std::shared_ptr<const plan::PlanNode> shared(std::move(p));
  MutexLock l(mu_);
  decodes_++;
  if (plans_.size() >= capacity_) plans_.clear();
  return plans_.try_emplace(std::string(bytes), shared).first->second;
}

size_t PlanCache::size() const {
  MutexLock l(mu_);
  return plans_.size();
}

uint64_t PlanCache::decodes() const {
  MutexLock l(mu_);
  return decodes_;
}

Result<std::shared_ptr<const plan::PlanNode>> RequestPlan(PlanCache& cache, std::string_view bytes,
                                                          const std::string_view* params,
                                                          std::vector<Value>* values) {
  if (!params) {
    ASSIGN_OR_RETURN(plan::PlanPtr p, plan::PlanNode::Deserialize(bytes));
    return std::shared_ptr<const plan::PlanNode>(std::move(p));
  }
  RETURN_NOT_OK(DecodeRow(*params, values));
  return cache.Get(bytes);
}

}  // namespace wattdb::node
