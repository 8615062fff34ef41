// Pattern matching for LIKE/ILIKE and the regular expression operators (~, ~*, !~, !~*),
// through RE2: matching time is linear in the input whatever the pattern, so no pattern a
// client sends can stall the server. Compiled patterns are cached per thread.
#pragma once

#include <string>

#include "common/status.h"

namespace wattdb::exec {

// SQL LIKE: '%' any run of characters, '_' one character, '\' escapes the next one.
// 22025 for a pattern ending in a lone escape, as PostgreSQL.
Result<bool> LikeMatch(const std::string& s, const std::string& pattern, bool case_insensitive);
// Unanchored regular expression search (RE2 syntax: PostgreSQL's AREs without
// back-references and look-around). 2201B for a malformed or unsupported pattern.
Result<bool> RegexMatch(const std::string& s, const std::string& pattern, bool case_insensitive);

}  // namespace wattdb::exec
