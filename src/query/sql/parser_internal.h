// Parser: the recursive-descent parser behind sql::Parse. Statements are parsed in
// parser.cc, expressions in parser_expr.cc; this header is internal to the sql folder.
// One Parser parses one token list; not thread-safe.
#pragma once

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "common/sqlstate.h"
#include "common/status.h"
#include "query/sql/ast.h"
#include "query/sql/lexer.h"

namespace wattdb::sql::internal {

// Keywords that cannot be names or implicit aliases.
extern const std::set<std::string> kReserved;

class Parser {
  // Deepest expression tree accepted (54001 beyond): within what the later recursive passes
  // (binder, evaluator) can take on a server thread (kServerThreadStackBytes).
  static constexpr int kMaxExprDepth = 10000;
  // Joins in one query string (54001 beyond): join trees are built by a loop, and later
  // passes over them recurse.
  static constexpr int kMaxJoins = 100;

 public:
  Parser(std::vector<Token> toks, std::string_view src) : t_(std::move(toks)), src_(src) {}

  Result<std::vector<Statement>> ParseAll();
  // One expression and nothing after it.
  Result<ExprPtr> ParseWholeExpr();

 private:
  const Token& Peek(int k = 0) const {
    size_t j = std::min(i_ + k, t_.size() - 1);
    return t_[j];
  }
  const Token& Next() { return t_[std::min(i_++, t_.size() - 1)]; }
  bool Accept(const char* kw) {
    if (Peek().Is(kw)) {
      i_++;
      return true;
    }
    return false;
  }
  bool AcceptOp(const char* op) {
    if (Peek().IsOp(op)) {
      i_++;
      return true;
    }
    return false;
  }
  Status SyntaxError() const {
    const Token& t = Peek();
    if (t.kind == Tok::kEnd)
      return Status::Sql(sqlstate::kSyntaxError, "syntax error at end of input", t.pos);
    std::string shown = t.kind == Tok::kString ? "'" + t.text + "'" : t.text;
    return Status::Sql(sqlstate::kSyntaxError, fmt::format("syntax error at or near \"{}\"", shown),
                       t.pos);
  }
  // 0A000 naming a known but unsupported clause at the current token, else 42601.
  Status UnsupportedOrSyntaxError() const;
  Status Expect(const char* kw) { return Accept(kw) ? Status::OK() : SyntaxError(); }
  Status ExpectOp(const char* op) { return AcceptOp(op) ? Status::OK() : SyntaxError(); }

  // An identifier usable as a name (unquoted non-reserved or quoted).
  Result<std::string> Name();
  Result<std::string> QualifiedName();
  // name [, name ...]
  Result<std::vector<std::string>> QualifiedNameList();
  Result<uint64_t> UnsignedInt();
  Result<SqlType> ParseType();
  Result<SqlType> ParseBaseType();
  // `t`[] (a one-dimensional array of `t`) if brackets follow.
  Result<SqlType> ArraySuffix(SqlType t);

  // Queries (parser_select.cc): set operations (INTERSECT binds tighter than UNION and
  // EXCEPT), parenthesized queries, FROM lists with joins and derived tables.
  Result<SelectStmt> ParseSelect();
  Result<SelectStmt> ParseSetOperand(int level);
  Result<SelectStmt> ParseSelectCore();
  Status ParseOrderLimit(SelectStmt* s);
  Result<TableRef> ParseFromItem();
  Result<TableRef> ParseTablePrimary();
  // True if the tokens from here are "(" ... "(" SELECT: a parenthesized query.
  bool IsSelectAhead(int from = 0) const;

  // Statements (parser.cc).
  Result<Statement> ParseStatement();
  // The statements ParseStatement hands on, each from its first keyword.
  Result<Statement> ParseBegin();
  Result<Statement> ParseShow();
  Result<Statement> ParseVacuum();
  Result<Statement> ParseAnalyze();
  Result<Statement> ParseExplain();
  Result<Statement> ParseTruncate();
  Result<Statement> ParseCreate();
  Result<Statement> ParseCreateView(bool or_replace);  // after CREATE [OR REPLACE] VIEW
  Result<Statement> ParseCreateTable();                // after CREATE TABLE
  // One element of CREATE TABLE's list: a table constraint or a column definition.
  Status ParseTableElement(CreateTableStmt* s);
  Status ParseColumnDef(CreateTableStmt* s);
  Result<Statement> ParseCreateIndex();
  // WITH (fillfactor = ..., ...): storage parameters are accepted and ignored.
  Status SkipStorageParameters();
  // WITH (name [= value], ...): `replicas` (if not null) receives replicas = N (1..7);
  // other parameters are accepted and ignored.
  Status ParseStorageParameters(uint32_t* replicas);     // [WITH (...)]
  Status ParseStorageParameterList(uint32_t* replicas);  // (name [= value], ...)
  Result<Statement> ParseDrop();
  Result<Statement> ParseInsert();
  Result<Statement> ParseUpdate();
  Result<Statement> ParseDelete();
  Result<Statement> ParseAlter();
  Result<Statement> ParseCopy();
  Result<Statement> ParseSet();
  // Transaction modes after BEGIN / SET TRANSACTION: ISOLATION LEVEL …, READ ONLY|WRITE,
  // [NOT] DEFERRABLE, comma-separated.
  Status ParseTxnModes(TxnStmt* t);
  Status ParseUserOptions(UserStmt* u);

  // Expressions (parser_expr.cc): precedence climbing, loosest first: OR, AND, NOT,
  // IS/comparison, BETWEEN/IN/LIKE, ||, + -, * / %, unary -, ::.
  Result<ExprPtr> ParseExpr() { return ParseOr(); }
  ExprPtr MakeBinary(std::string op, ExprPtr l, ExprPtr r, int pos);
  Result<ExprPtr> ParseOr();
  Result<ExprPtr> ParseAnd();
  Result<ExprPtr> ParseNot();
  Result<ExprPtr> ParseComparison();
  Result<ExprPtr> ParsePredicate();
  Result<ExprPtr> ParseConcat();
  Result<ExprPtr> ParseAdd();
  Result<ExprPtr> ParseMul();
  Result<ExprPtr> ParseUnary();
  Result<ExprPtr> ParseCastSuffix();
  Result<ExprPtr> ParsePrimary();
  // The pieces of ParsePrimary, by the token that starts the expression.
  Result<ExprPtr> ParseLiteral();        // integer, float, string or $n
  Result<ExprPtr> ParseParenthesized();  // ( expr ) or ( SELECT ... )
  Result<ExprPtr> ParseKeywordOrName();  // NULL, TRUE, CASE, ARRAY, EXISTS, CAST, ... or a name
  Result<ExprPtr> ParseNameOrCall();     // [table.]column or f(args)
  // The SELECT of kind(SELECT ...) after the opening parenthesis, and the closing one.
  Result<ExprPtr> ParseSubqueryAfterParen(Expr::Kind kind, int pos);
  Result<ExprPtr> ParseCase();

  // The source text from 1-based position `from` up to (not including) `to`, trimmed.
  std::string SourceText(int from, int to) const;

  std::vector<Token> t_;
  std::string_view src_;  // the text the tokens came from (borrowed)
  size_t i_ = 0;
  int joins_ = 0;  // joins parsed so far (kMaxJoins)
};

}  // namespace wattdb::sql::internal
