#include "master/energy/decision_log.h"

namespace wattdb::master {

void DecisionLog::Add(DecisionRecord r) {
  MutexLock l(mu_);
  entries_.push_back(std::move(r));
  while (entries_.size() > kCapacity) entries_.pop_front();
}

std::vector<DecisionRecord> DecisionLog::Snapshot() const {
  MutexLock l(mu_);
  return {entries_.begin(), entries_.end()};
}

DecisionRecord DecisionLog::Last() const {
  MutexLock l(mu_);
  return entries_.empty() ? DecisionRecord{} : entries_.back();
}

}  // namespace wattdb::master
