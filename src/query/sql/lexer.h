// SQL lexer: splits statement text into tokens that remember their 1-based character
// position, so that syntax errors can point at the offending token (ErrorResponse 'P').
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace wattdb::sql {

enum class Tok {
  kIdent,  // identifier, folded to lower case unless quoted
  kQuotedIdent,
  kString,  // '...' with '' unescaped
  kInteger,
  kFloat,
  kOp,     // operators and punctuation: ( ) , ; . * + - / % = < > <= >= <> != || ::
  kParam,  // $1
  kEnd,
};

struct Token {
  Tok kind;
  std::string text;  // folded identifier, unescaped string, operator spelling, number text
  int pos;           // 1-based character position in the statement
  // True if an unquoted identifier equals `kw` (lower case).
  bool Is(const char* kw) const { return kind == Tok::kIdent && text == kw; }
  bool IsOp(const char* op) const { return kind == Tok::kOp && text == op; }
};

// Tokenizes `sql`. Errors (unterminated string, stray character) carry SQLSTATE 42601 and a
// position.
Result<std::vector<Token>> Lex(const std::string& sql);

}  // namespace wattdb::sql
