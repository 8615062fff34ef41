#include "query/exec/pattern.h"

#include <list>
#include <memory>
#include <unordered_map>

#include <re2/re2.h>

#include "common/sqlstate.h"

namespace wattdb::exec {

namespace {

// A small per-thread LRU cache of compiled patterns: a statement applies the same pattern
// to every row.
class PatternCache {
 public:
  // The compiled pattern for (`regex`, `ci`), or its compile error.
  Result<const RE2*> Get(const std::string& regex, bool ci) {
    std::string key = (ci ? "i:" : "c:") + regex;
    auto it = map_.find(key);
    if (it != map_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second.get();
    }
    RE2::Options o;
    o.set_case_sensitive(!ci);
    o.set_dot_nl(true);
    o.set_log_errors(false);
    o.set_max_mem(8 << 20);
    auto re = std::make_unique<RE2>(regex, o);
    if (!re->ok()) {
      return Status::Sql(sqlstate::kInvalidRegularExpression,
                         "invalid regular expression: " + re->error());
    }
    lru_.emplace_front(key, std::move(re));
    map_[key] = lru_.begin();
    if (lru_.size() > kCapacity) {
      map_.erase(lru_.back().first);
      lru_.pop_back();
    }
    return lru_.front().second.get();
  }

 private:
  static constexpr size_t kCapacity = 64;
  using Entry = std::pair<std::string, std::unique_ptr<RE2>>;
  std::list<Entry> lru_;
  std::unordered_map<std::string, std::list<Entry>::iterator> map_;
};

PatternCache& Cache() {
  thread_local PatternCache cache;
  return cache;
}

// LIKE pattern -> anchored RE2 pattern.
Result<std::string> LikeToRegex(const std::string& p) {
  std::string out;
  out.reserve(p.size() * 2);
  for (size_t i = 0; i < p.size(); i++) {
    char c = p[i];
    if (c == '%') {
      out += ".*";
    } else if (c == '_') {
      out += ".";
    } else {
      if (c == '\\') {
        if (++i == p.size())
          return Status::Sql(sqlstate::kInvalidEscapeSequence,
                             "LIKE pattern must not end with escape character");
        c = p[i];
      }
      out += RE2::QuoteMeta(std::string(1, c));
    }
  }
  return out;
}

}  // namespace

Result<bool> LikeMatch(const std::string& s, const std::string& pattern, bool ci) {
  // Plain patterns (no wildcards or escapes) need no automaton.
  if (!ci && pattern.find_first_of("%_\\") == std::string::npos) return s == pattern;
  ASSIGN_OR_RETURN(std::string regex, LikeToRegex(pattern));
  ASSIGN_OR_RETURN(const RE2* re, Cache().Get(regex, ci));
  return RE2::FullMatch(s, *re);
}

Result<bool> RegexMatch(const std::string& s, const std::string& pattern, bool ci) {
  ASSIGN_OR_RETURN(const RE2* re, Cache().Get(pattern, ci));
  return RE2::PartialMatch(s, *re);
}

}  // namespace wattdb::exec
