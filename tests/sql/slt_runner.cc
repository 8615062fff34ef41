#include "tests/sql/slt_runner.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>

namespace wattdb::testing {

namespace {

std::vector<std::string> Split(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

std::string Cell(const std::string& v) { return v.empty() ? "(empty)" : v; }

}  // namespace

std::vector<SltFailure> RunSltFile(const std::string& path, PgConn& conn, int* records_run) {
  std::vector<SltFailure> failures;
  std::ifstream f(path);
  if (!f) return {{0, "cannot open " + path}};
  std::vector<std::string> lines;
  for (std::string l; std::getline(f, l);) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
    lines.push_back(l);
  }
  bool valuewise = false;
  *records_run = 0;
  size_t i = 0;
  while (i < lines.size()) {
    std::string line = lines[i];
    if (line.empty() || line[0] == '#') {
      i++;
      continue;
    }
    int start = static_cast<int>(i) + 1;
    auto words = Split(line);
    bool skip = false;
    while (!words.empty() && (words[0] == "skipif" || words[0] == "onlyif")) {
      std::string label = words.size() > 1 ? words[1] : "";
      bool ours = label == "wattdb" || label == "postgresql";
      if ((words[0] == "skipif" && ours) || (words[0] == "onlyif" && !ours)) skip = true;
      line = lines[++i];
      words = Split(line);
    }
    if (words.empty()) {
      i++;
      continue;
    }
    if (words[0] == "halt") break;
    if (words[0] == "hash-threshold") {
      i++;
      continue;
    }
    if (words[0] == "control") {
      valuewise = words.size() > 2 && words[2] == "valuewise";
      i++;
      continue;
    }
    if (words[0] != "statement" && words[0] != "query") {
      failures.push_back({start, "unknown record: " + line});
      i++;
      continue;
    }
    // SQL runs until a blank line or "----".
    std::string sql;
    i++;
    while (i < lines.size() && !lines[i].empty() && lines[i] != "----")
      sql += (sql.empty() ? "" : "\n") + lines[i++];
    std::vector<std::string> expected;
    bool has_results = i < lines.size() && lines[i] == "----";
    if (has_results) {
      i++;
      while (i < lines.size() && !lines[i].empty()) expected.push_back(lines[i++]);
    }
    if (skip) continue;
    (*records_run)++;
    std::vector<std::vector<std::string>> rows;
    std::string msg;
    std::string state = conn.Exec(sql, &rows, &msg);
    bool want_error = words.size() > 1 && words[1] == "error";
    if (want_error) {
      // "statement error <regex>": the message must match, as in sqllogictest-rs.
      std::string pattern;
      if (size_t at = line.find(" error "); at != std::string::npos) pattern = line.substr(at + 7);
      if (state.empty()) {
        failures.push_back({start, "expected an error, statement succeeded:\n" + sql});
      } else if (!pattern.empty() && !std::regex_search(msg, std::regex(pattern))) {
        failures.push_back({start, fmt::format("{}\nfailed with \"{}\", which does not match /{}/",
                                               sql, msg, pattern)});
      }
      continue;
    }
    if (!state.empty()) {
      failures.push_back({start, fmt::format("{} failed with {}: {}", sql, state, msg)});
      continue;
    }
    if (words[0] == "statement") continue;
    std::string sort = words.size() > 2 ? words[2] : "nosort";
    std::vector<std::string> got;
    if (valuewise || sort == "valuesort") {
      for (auto& r : rows) {
        for (auto& v : r) got.push_back(Cell(v));
      }
      if (sort != "nosort") std::sort(got.begin(), got.end());
    } else {
      for (auto& r : rows) {
        std::string s;
        for (size_t c = 0; c < r.size(); c++) s += (c ? " " : "") + Cell(r[c]);
        got.push_back(s);
      }
      if (sort == "rowsort") std::sort(got.begin(), got.end());
    }
    if (got != expected) {
      std::string m = "result mismatch for:\n" + sql + "\nexpected:\n";
      for (auto& e : expected) m += "  " + e + "\n";
      m += "got:\n";
      for (auto& g : got) m += "  " + g + "\n";
      failures.push_back({start, m});
    }
  }
  return failures;
}

}  // namespace wattdb::testing
