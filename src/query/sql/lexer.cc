#include "query/sql/lexer.h"

#include <cctype>

#include "common/sqlstate.h"

namespace wattdb::sql {

namespace {

bool IdentStart(unsigned char c) { return std::isalpha(c) || c == '_' || c >= 0x80; }
bool IdentChar(unsigned char c) { return std::isalnum(c) || c == '_' || c == '$' || c >= 0x80; }

// Converts a byte offset into a 1-based character (code point) position.
int CharsBetween(const std::string& s, size_t from, size_t to) {
  int n = 0;
  for (size_t i = from; i < to && i < s.size(); i++)
    n += (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
  return n;
}

int CharPos(const std::string& s, size_t byte) {
  int n = 1;
  for (size_t i = 0; i < byte && i < s.size(); i++)
    n += (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
  return n;
}

// Skips a /* comment */ (they nest, as in PostgreSQL) starting at sql[i].
Status SkipBlockComment(const std::string& sql, size_t& i) {
  size_t n = sql.size();
  size_t start = i;
  int depth = 0;
  while (i < n) {
    if (sql.compare(i, 2, "/*") == 0) {
      depth++;
      i += 2;
    } else if (sql.compare(i, 2, "*/") == 0) {
      depth--;
      i += 2;
      if (depth == 0) break;
    } else {
      i++;
    }
  }
  if (depth != 0) {
    return Status::Sql(sqlstate::kSyntaxError, "unterminated /* comment", CharPos(sql, start));
  }
  return Status::OK();
}

// A "quoted identifier" starting at sql[i] (a doubled quote stands for one).
Result<Token> LexQuotedIdent(const std::string& sql, size_t& i, int pos) {
  size_t n = sql.size();
  std::string w;
  i++;
  bool closed = false;
  while (i < n) {
    if (sql[i] == '"') {
      if (i + 1 < n && sql[i + 1] == '"') {
        w += '"';
        i += 2;
        continue;
      }
      i++;
      closed = true;
      break;
    }
    w += sql[i++];
  }
  if (!closed) return Status::Sql(sqlstate::kSyntaxError, "unterminated quoted identifier", pos);
  if (w.empty())
    return Status::Sql(sqlstate::kSyntaxError, "zero-length delimited identifier", pos);
  return Token{Tok::kQuotedIdent, w, pos};
}

// A 'string' or E'string' (with backslash escapes) starting at sql[i].
Result<Token> LexString(const std::string& sql, size_t& i, int pos) {
  size_t n = sql.size();
  bool escapes = sql[i] != '\'';
  if (escapes) i++;
  std::string w;
  i++;
  bool closed = false;
  while (i < n) {
    char ch = sql[i];
    if (ch == '\'') {
      if (i + 1 < n && sql[i + 1] == '\'') {
        w += '\'';
        i += 2;
        continue;
      }
      i++;
      closed = true;
      break;
    }
    if (escapes && ch == '\\' && i + 1 < n) {
      char e = sql[i + 1];
      w += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
      i += 2;
      continue;
    }
    w += ch;
    i++;
  }
  if (!closed) return Status::Sql(sqlstate::kSyntaxError, "unterminated quoted string", pos);
  return Token{Tok::kString, w, pos};
}

// An integer or a float (1.5, .5, 1e3) starting at sql[i].
Result<Token> LexNumber(const std::string& sql, size_t& i, int pos) {
  size_t n = sql.size();
  size_t s = i;
  bool is_float = false;
  while (i < n && std::isdigit(static_cast<unsigned char>(sql[i]))) i++;
  if (i < n && sql[i] == '.') {
    is_float = true;
    i++;
    while (i < n && std::isdigit(static_cast<unsigned char>(sql[i]))) i++;
  }
  if (i < n && (sql[i] == 'e' || sql[i] == 'E')) {
    size_t save = i;
    i++;
    if (i < n && (sql[i] == '+' || sql[i] == '-')) i++;
    if (i < n && std::isdigit(static_cast<unsigned char>(sql[i]))) {
      is_float = true;
      while (i < n && std::isdigit(static_cast<unsigned char>(sql[i]))) i++;
    } else {
      i = save;
    }
  }
  if (i < n && IdentStart(sql[i])) {
    return Status::Sql(sqlstate::kSyntaxError,
                       fmt::format("trailing junk after numeric literal at or near \"{}\"",
                                   sql.substr(s, i - s + 1)),
                       pos);
  }
  return Token{is_float ? Tok::kFloat : Tok::kInteger, sql.substr(s, i - s), pos};
}

}  // namespace

Result<std::vector<Token>> Lex(const std::string& sql) {
  std::vector<Token> out;
  size_t i = 0, n = sql.size();
  size_t pos_byte = 0;  // byte offset whose 1-based character position is pos_chars
  int pos_chars = 1;
  while (i < n) {
    unsigned char c = sql[i];
    if (std::isspace(c)) {
      i++;
      continue;
    }
    if (c == '-' && i + 1 < n && sql[i + 1] == '-') {
      while (i < n && sql[i] != '\n') i++;
      continue;
    }
    if (c == '/' && i + 1 < n && sql[i + 1] == '*') {
      RETURN_NOT_OK(SkipBlockComment(sql, i));
      continue;
    }
    // Positions advance incrementally: recounting from the start would make lexing a
    // large statement (a bulk INSERT) quadratic.
    pos_chars += CharsBetween(sql, pos_byte, i);
    pos_byte = i;
    int pos = pos_chars;
    bool escape_string = (c == 'E' || c == 'e') && i + 1 < n && sql[i + 1] == '\'';
    if (IdentStart(c) && !escape_string) {
      size_t s = i;
      while (i < n && IdentChar(sql[i])) i++;
      std::string w = sql.substr(s, i - s);
      for (auto& ch : w) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      out.push_back({Tok::kIdent, w, pos});
      continue;
    }
    if (c == '"') {
      ASSIGN_OR_RETURN(Token tok, LexQuotedIdent(sql, i, pos));
      out.push_back(std::move(tok));
      continue;
    }
    if (c == '\'' || ((c == 'E' || c == 'e') && i + 1 < n && sql[i + 1] == '\'')) {
      ASSIGN_OR_RETURN(Token tok, LexString(sql, i, pos));
      out.push_back(std::move(tok));
      continue;
    }
    if (std::isdigit(c) ||
        (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(sql[i + 1])))) {
      ASSIGN_OR_RETURN(Token tok, LexNumber(sql, i, pos));
      out.push_back(std::move(tok));
      continue;
    }
    if (c == '$' && i + 1 < n && std::isdigit(static_cast<unsigned char>(sql[i + 1]))) {
      size_t s = ++i;
      while (i < n && std::isdigit(static_cast<unsigned char>(sql[i]))) i++;
      out.push_back({Tok::kParam, sql.substr(s, i - s), pos});
      continue;
    }
    if (sql.compare(i, 3, "!~*") == 0) {  // regular expression operators
      out.push_back({Tok::kOp, "!~*", pos});
      i += 3;
      continue;
    }
    static const char* kTwo[] = {"<=", ">=", "<>", "!=", "||", "::", "~*", "!~"};
    bool matched = false;
    for (const char* op : kTwo) {
      if (sql.compare(i, 2, op) == 0) {
        out.push_back({Tok::kOp, op, pos});
        i += 2;
        matched = true;
        break;
      }
    }
    if (matched) continue;
    if (std::string("(),;.*+-/%=<>[]~").find(static_cast<char>(c)) != std::string::npos) {
      out.push_back({Tok::kOp, std::string(1, static_cast<char>(c)), pos});
      i++;
      continue;
    }
    return Status::Sql(sqlstate::kSyntaxError,
                       fmt::format("syntax error at or near \"{}\"", static_cast<char>(c)), pos);
  }
  out.push_back({Tok::kEnd, "", CharPos(sql, n)});
  return out;
}

}  // namespace wattdb::sql
