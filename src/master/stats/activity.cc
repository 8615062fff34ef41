#include "master/stats/activity.h"

#include <charconv>

namespace wattdb::master {

void Activity::Connected(Backend b, std::string_view client, int64_t now_us) {
  if (auto colon = client.rfind(':'); colon != std::string_view::npos) {
    b.client_addr = std::string(client.substr(0, colon));
    std::string_view digits = client.substr(colon + 1);
    uint16_t port = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    b.client_port = ec == std::errc() && end == digits.data() + digits.size() ? port : -1;
  }
  b.backend_start_us = b.state_change_us = now_us;
  MutexLock l(mu_);
  backends_[b.pid] = std::move(b);
}

void Activity::Disconnected(int32_t pid) {
  MutexLock l(mu_);
  backends_.erase(pid);
}

void Activity::StatementStarted(int32_t pid, std::string_view query, int64_t now_us) {
  MutexLock l(mu_);
  auto it = backends_.find(pid);
  if (it == backends_.end()) return;
  Backend& b = it->second;
  if (b.xact_start_us == 0)
    b.xact_start_us = now_us;  // not in a block: the statement is the transaction
  b.query_start_us = b.state_change_us = now_us;
  b.state = "active";
  b.query.assign(query);  // keeps its memory from statement to statement
}

void Activity::StatementEnded(int32_t pid, char txn_status, int64_t now_us) {
  MutexLock l(mu_);
  auto it = backends_.find(pid);
  if (it == backends_.end()) return;
  Backend& b = it->second;
  b.state_change_us = now_us;
  b.state = txn_status == 'T'   ? "idle in transaction"
            : txn_status == 'E' ? "idle in transaction (aborted)"
                                : "idle";
  if (txn_status == 'I') b.xact_start_us = 0;
}

std::vector<Activity::Backend> Activity::Snapshot() const {
  MutexLock l(mu_);
  std::vector<Backend> out;
  out.reserve(backends_.size());
  for (const auto& [pid, b] : backends_) out.push_back(b);
  return out;
}

}  // namespace wattdb::master
