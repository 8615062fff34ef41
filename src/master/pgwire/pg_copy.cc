#include "master/pgwire/pg_copy.h"

#include <algorithm>

#include "common/sqlstate.h"

namespace wattdb::master::pg {

namespace {

Status ParseText(std::string_view data, const sql::CopyStmt& s, CopyRows* out) {
  size_t line_no = 0;
  while (!data.empty()) {
    size_t nl = data.find('\n');
    std::string_view line = data.substr(0, nl);
    data.remove_prefix(nl == std::string_view::npos ? data.size() : nl + 1);
    line_no++;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line == "\\.") break;  // end-of-data marker
    if (s.header && line_no == 1) continue;
    size_t start = 0;
    while (true) {
      size_t end = line.find(s.delimiter, start);
      std::string_view raw =
          line.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
      if (raw == s.null_string) {
        out->EndField(true);
      } else if (raw.find('\\') == std::string_view::npos) {
        out->Append(raw);
        out->EndField(false);
      } else {
        for (size_t i = 0; i < raw.size(); i++) {
          if (raw[i] != '\\' || i + 1 == raw.size()) {
            out->Append(raw[i]);
            continue;
          }
          char e = raw[++i];
          out->Append(e == 't'   ? '\t'
                      : e == 'n' ? '\n'
                      : e == 'r' ? '\r'
                      : e == 'b' ? '\b'
                      : e == 'f' ? '\f'
                      : e == 'v' ? '\v'
                                 : e);
        }
        out->EndField(false);
      }
      if (end == std::string_view::npos) break;
      start = end + 1;
    }
    out->EndRow();
  }
  return Status::OK();
}

Status ParseCsv(std::string_view data, const sql::CopyStmt& s, CopyRows* out, size_t* used) {
  const char delim = s.delimiter;
  bool quoted = false, in_quotes = false, any = false;
  size_t line_no = 1;
  size_t row_start = 0;  // where the row being parsed began
  auto end_field = [&] {
    out->EndField(!quoted && out->Pending() == s.null_string);
    quoted = false;
  };
  auto end_row = [&] {
    end_field();
    if (s.header && line_no == 1) {
      out->DropRow();
    } else {
      out->EndRow();
    }
    any = false;
  };
  const size_t n = data.size();
  for (size_t i = 0; i < n;) {
    if (in_quotes) {  // up to the next quote: a doubled one is a quote, else the field's end quote
      size_t q = data.find('"', i);
      std::string_view run =
          data.substr(i, q == std::string_view::npos ? std::string_view::npos : q - i);
      line_no += static_cast<size_t>(std::count(run.begin(), run.end(), '\n'));
      out->Append(run);
      if (q == std::string_view::npos) break;
      if (q + 1 < n && data[q + 1] == '"') {
        out->Append('"');
        i = q + 2;
      } else {
        in_quotes = false;
        i = q + 1;
      }
      continue;
    }
    any = true;
    char c = data[i];
    if (c == '"') {
      in_quotes = quoted = true;
      i++;
    } else if (c == delim) {
      end_field();
      i++;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 == n && used)
        break;  // perhaps a CRLF cut in two: wait for the next piece
      i += c == '\r' && i + 1 < n && data[i + 1] == '\n' ? 2 : 1;
      if (out->PendingFields() == 0 && !quoted && out->Pending() == "\\.") {
        out->DropRow();
        if (used) *used = n;  // the end of the data: what follows is ignored
        return Status::OK();
      }
      end_row();
      line_no++;
      row_start = i;
    } else {  // a run of plain characters
      size_t j = i + 1;
      while (j < n && data[j] != delim && data[j] != '\n' && data[j] != '\r' && data[j] != '"') j++;
      out->Append(data.substr(i, j - i));
      i = j;
    }
  }
  if (used) {  // a row the piece ends in waits for the next piece
    if (row_start < n) out->DropRow();
    *used = row_start;
    return Status::OK();
  }
  if (in_quotes)
    return Status::Sql(sqlstate::kBadCopyFileFormat,
                       fmt::format("unterminated CSV quoted field (line {})", line_no));
  if (any || !out->Pending().empty() || out->PendingFields() > 0) end_row();
  return Status::OK();
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

Status ParseCopyData(std::string_view data, const sql::CopyStmt& s, CopyRows* out, size_t* used) {
  out->Reserve(data.size(), data.size() / 8);
  if (s.csv) return ParseCsv(data, s, out, used);
  if (used) {
    *used = WholeRowsPrefix(data, s);
    data = data.substr(0, *used);
  }
  return ParseText(data, s, out);
}

size_t WholeRowsPrefix(std::string_view data, const sql::CopyStmt& s) {
  if (!s.csv) {
    size_t nl = data.rfind('\n');
    return nl == std::string_view::npos ? 0 : nl + 1;
  }
  bool in_quotes = false;
  size_t end = 0;
  for (size_t i = 0; i < data.size(); i++) {
    if (data[i] == '"')
      in_quotes = !in_quotes;  // a doubled quote toggles twice
    else if (data[i] == '\n' && !in_quotes)
      end = i + 1;
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
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
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
