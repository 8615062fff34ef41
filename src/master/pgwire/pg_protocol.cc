#include "master/pgwire/pg_protocol.h"

#include <algorithm>
#include <cstdlib>

#include "common/sqlstate.h"

namespace wattdb::master::pg {

void MessageWriter::Begin(char type) {
  out_.push_back(type);
  start_ = out_.size();
  I32(0);  // length placeholder
}

void MessageWriter::End() {
  uint32_t len = static_cast<uint32_t>(out_.size() - start_);
  for (int i = 0; i < 4; i++) out_[start_ + i] = static_cast<char>((len >> (24 - 8 * i)) & 0xff);
}

void MessageWriter::I16(int16_t v) {
  out_.push_back(static_cast<char>((v >> 8) & 0xff));
  out_.push_back(static_cast<char>(v & 0xff));
}

void MessageWriter::I32(int32_t v) {
  for (int i = 3; i >= 0; i--) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void MessageWriter::Cstr(std::string_view s) {
  // A NUL inside would end the string early on the client; strip it.
  for (char c : s) {
    if (c != 0) out_.push_back(c);
  }
  out_.push_back(0);
}

void MessageWriter::AuthenticationOk() {
  Begin('R');
  I32(0);
  End();
}

void MessageWriter::Authentication(int32_t code, std::string_view data) {
  Begin('R');
  I32(code);
  out_.append(data);
  End();
}

void MessageWriter::ParameterStatus(std::string_view name, std::string_view value) {
  Begin('S');
  Cstr(name);
  Cstr(value);
  End();
}

void MessageWriter::BackendKeyData(int32_t pid, int32_t secret) {
  Begin('K');
  I32(pid);
  I32(secret);
  End();
}

void MessageWriter::ReadyForQuery(char status) {
  Begin('Z');
  out_.push_back(status);
  End();
}

void MessageWriter::Simple(char type) {
  Begin(type);
  End();
}

void MessageWriter::CopyResponse(char type, int ncols) {
  Begin(type);
  out_.push_back(0);  // overall format: text
  I16(static_cast<int16_t>(ncols));
  for (int i = 0; i < ncols; i++) I16(0);
  End();
}

void MessageWriter::CopyData(std::string_view data) {
  Begin('d');
  out_.append(data);
  End();
}

void MessageWriter::ParameterDescription(const std::vector<SqlType>& types) {
  Begin('t');
  I16(static_cast<int16_t>(types.size()));
  for (const auto& t : types) I32(t.id == TypeId::kNull ? 25 : t.PgOid());
  End();
}

void MessageWriter::RowDescription(const std::vector<std::string>& names,
                                   const std::vector<SqlType>& types,
                                   const std::vector<int16_t>& formats) {
  Begin('T');
  I16(static_cast<int16_t>(names.size()));
  for (size_t i = 0; i < names.size(); i++) {
    Cstr(names[i]);
    I32(0);  // table oid
    I16(0);  // column attribute number
    I32(types[i].PgOid());
    I16(types[i].PgLen());
    I32(types[i].PgTypmod());
    I16(i < formats.size() ? formats[i] : 0);  // format code
  }
  End();
}

void MessageWriter::DataRow(const std::vector<const std::string*>& cells) {
  Begin('D');
  I16(static_cast<int16_t>(cells.size()));
  for (const std::string* c : cells) {
    if (!c) {
      I32(-1);
      continue;
    }
    I32(static_cast<int32_t>(c->size()));
    out_.append(*c);
  }
  End();
}

void MessageWriter::CommandComplete(std::string_view tag) {
  Begin('C');
  Cstr(tag);
  End();
}

void MessageWriter::EmptyQueryResponse() {
  Begin('I');
  End();
}

void MessageWriter::ErrorOrNotice(char type, std::string_view severity, std::string_view sqlstate,
                                  std::string_view message, int position) {
  Begin(type);
  out_.push_back('S');
  Cstr(severity);
  out_.push_back('V');
  Cstr(severity);
  out_.push_back('C');
  Cstr(sqlstate);
  out_.push_back('M');
  Cstr(message);
  if (position > 0) {
    out_.push_back('P');
    Cstr(std::to_string(position));
  }
  out_.push_back(0);
  End();
}

Result<std::vector<std::pair<std::string, std::string>>> ParseStartupParams(std::string_view body) {
  std::vector<std::pair<std::string, std::string>> out;
  auto next = [&](std::string* s) {
    auto z = body.find('\0');
    if (z == std::string_view::npos) return false;
    s->assign(body.substr(0, z));
    body.remove_prefix(z + 1);
    return true;
  };
  while (true) {
    std::string k, v;
    if (!next(&k))
      return Status::Sql(sqlstate::kProtocolViolation,
                         "invalid startup packet layout: expected terminator");
    if (k.empty()) break;
    if (!next(&v))
      return Status::Sql(sqlstate::kProtocolViolation,
                         "invalid startup packet layout: missing value");
    out.emplace_back(std::move(k), std::move(v));
  }
  if (!body.empty())
    return Status::Sql(sqlstate::kProtocolViolation,
                       "invalid startup packet layout: trailing bytes");
  return out;
}

Result<std::vector<std::pair<std::string, std::string>>> ParseStartupOptions(
    std::string_view options) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < options.size(); i++) {
    char c = options[i];
    if (c == '\\' && i + 1 < options.size()) {
      word += options[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i < words.size(); i++) {
    std::string setting;
    if (words[i] == "-c" && i + 1 < words.size()) {
      setting = words[++i];
    } else if (words[i].rfind("-c", 0) == 0 && words[i].size() > 2) {
      setting = words[i].substr(2);
    } else if (words[i].rfind("--", 0) == 0) {
      setting = words[i].substr(2);
    } else {
      return Status::Sql(
          sqlstate::kInvalidParameterValue,
          fmt::format("invalid command-line argument for server process: {}", words[i]));
    }
    size_t eq = setting.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::Sql(sqlstate::kInvalidParameterValue,
                         fmt::format("-c {} requires a value", setting));
    }
    std::string name = setting.substr(0, eq);
    std::replace(name.begin(), name.end(), '-', '_');
    out.emplace_back(std::move(name), setting.substr(eq + 1));
  }
  return out;
}

}  // namespace wattdb::master::pg
