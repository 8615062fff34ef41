#include "master/pgwire/pg_copy.h"

namespace wattdb::master::pg {

namespace {

Result<std::vector<CopyRow>> ParseText(std::string_view data, const sql::CopyStmt& s) {
  std::vector<CopyRow> rows;
  size_t line_no = 0;
  while (!data.empty()) {
    size_t nl = data.find('\n');
    std::string_view line = data.substr(0, nl);
    data.remove_prefix(nl == std::string_view::npos ? data.size() : nl + 1);
    line_no++;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line == "\\.") break;  // end-of-data marker
    if (s.header && line_no == 1) continue;
    CopyRow row;
    size_t start = 0;
    while (true) {
      size_t end = line.find(s.delimiter, start);
      std::string_view raw = line.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
      if (raw == s.null_string) {
        row.push_back(std::nullopt);
      } else {
        std::string f;
        for (size_t i = 0; i < raw.size(); i++) {
          if (raw[i] != '\\' || i + 1 == raw.size()) {
            f.push_back(raw[i]);
            continue;
          }
          char e = raw[++i];
          f.push_back(e == 't' ? '\t' : e == 'n' ? '\n' : e == 'r' ? '\r' : e == 'b' ? '\b' : e == 'f' ? '\f'
                      : e == 'v' ? '\v' : e);
        }
        row.push_back(std::move(f));
      }
      if (end == std::string_view::npos) break;
      start = end + 1;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

Result<std::vector<CopyRow>> ParseCsv(std::string_view data, const sql::CopyStmt& s) {
  std::vector<CopyRow> rows;
  CopyRow row;
  std::string field;
  bool quoted = false, in_quotes = false, any = false;
  size_t line_no = 1;
  auto end_field = [&] {
    if (!quoted && field == s.null_string) {
      row.push_back(std::nullopt);
    } else {
      row.push_back(field);
    }
    field.clear();
    quoted = false;
  };
  auto end_row = [&] {
    end_field();
    if (!(s.header && line_no == 1)) rows.push_back(std::move(row));
    row.clear();
    any = false;
  };
  for (size_t i = 0; i < data.size(); i++) {
    char c = data[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < data.size() && data[i + 1] == '"') {
          field.push_back('"');
          i++;
        } else {
          in_quotes = false;
        }
      } else {
        if (c == '\n') line_no++;
        field.push_back(c);
      }
      continue;
    }
    any = true;
    if (c == '"') {
      in_quotes = quoted = true;
    } else if (c == s.delimiter) {
      end_field();
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < data.size() && data[i + 1] == '\n') i++;
      if (row.empty() && field == "\\." && !quoted) return rows;
      end_row();
      line_no++;
    } else {
      field.push_back(c);
    }
  }
  if (in_quotes) return Status::Sql("22P04", fmt::format("unterminated CSV quoted field (line {})", line_no));
  if (any || !field.empty() || !row.empty()) end_row();
  return rows;
}

std::string CsvQuote(const std::string& v, char delim) {
  bool needs = v.empty() || v.find_first_of(std::string("\"\n\r") + delim) != std::string::npos;
  if (!needs) return v;
  std::string q = "\"";
  for (char c : v) {
    if (c == '"') q.push_back('"');
    q.push_back(c);
  }
  return q + "\"";
}

}  // namespace

Result<std::vector<CopyRow>> ParseCopyData(std::string_view data, const sql::CopyStmt& s) {
  return s.csv ? ParseCsv(data, s) : ParseText(data, s);
}

size_t WholeRowsPrefix(std::string_view data, const sql::CopyStmt& s) {
  if (!s.csv) {
    size_t nl = data.rfind('\n');
    return nl == std::string_view::npos ? 0 : nl + 1;
  }
  bool in_quotes = false;
  size_t end = 0;
  for (size_t i = 0; i < data.size(); i++) {
    if (data[i] == '"') in_quotes = !in_quotes;  // a doubled quote toggles twice
    else if (data[i] == '\n' && !in_quotes) end = i + 1;
  }
  return end;
}

std::string FormatCopyRow(const std::vector<Value>& row, const sql::CopyStmt& s) {
  std::string out;
  for (size_t i = 0; i < row.size(); i++) {
    if (i) out.push_back(s.delimiter);
    if (row[i].is_null()) {
      out += s.null_string;
      continue;
    }
    std::string v = row[i].ToText();
    if (s.csv) {
      out += CsvQuote(v, s.delimiter);
      continue;
    }
    for (char c : v) {
      switch (c) {
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (c == s.delimiter) out.push_back('\\');
          out.push_back(c);
      }
    }
  }
  out.push_back('\n');
  return out;
}

}  // namespace wattdb::master::pg
