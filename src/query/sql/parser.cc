#include "query/sql/parser.h"

#include <charconv>
#include <map>

#include "common/sqlstate.h"
#include "query/sql/parser_internal.h"

namespace wattdb::sql {
namespace internal {

const std::set<std::string> kReserved = {
    "all",     "and",    "as",        "asc",    "between",   "by",     "case",   "cast",  "create",
    "delete",  "desc",   "distinct",  "drop",   "else",      "end",    "except", "false", "from",
    "group",   "having", "in",        "insert", "intersect", "into",   "is",     "join",  "left",
    "like",    "limit",  "not",       "null",   "nulls",     "offset", "on",     "or",    "order",
    "primary", "select", "set",       "table",  "then",      "to",     "true",   "union", "update",
    "using",   "values", "when",      "where",  "with",      "inner",  "outer",  "right", "cross",
    "full",    "ilike",  "returning", "fetch",  "window",    "for"};

Result<std::vector<Statement>> Parser::ParseAll() {
  std::vector<Statement> out;
  while (true) {
    while (Peek().IsOp(";")) i_++;
    if (Peek().kind == Tok::kEnd) break;
    ASSIGN_OR_RETURN(Statement s, ParseStatement());
    out.push_back(std::move(s));
    if (Peek().kind == Tok::kEnd) break;
    if (!Peek().IsOp(";")) return UnsupportedOrSyntaxError();
  }
  if (out.empty()) out.push_back(EmptyStmt{});
  return out;
}

Status Parser::UnsupportedOrSyntaxError() const {
  // Clauses PostgreSQL has and we do not: name them (0A000) rather than a bare syntax error.
  const Token& t = Peek();
  static const std::map<std::string, std::string> kClauses = {{"returning", "RETURNING"},
                                                              {"on", "ON CONFLICT"},
                                                              {"window", "WINDOW"},
                                                              {"tablesample", "TABLESAMPLE"},
                                                              {"over", "window functions (OVER)"}};
  if (t.kind == Tok::kIdent) {
    if (auto it = kClauses.find(t.text); it != kClauses.end()) {
      return Status::Sql(sqlstate::kFeatureNotSupported,
                         fmt::format("{} is not supported yet", it->second), t.pos);
    }
  }
  if (t.IsOp("["))
    return Status::Sql(sqlstate::kFeatureNotSupported,
                       "multidimensional arrays and array slices are not supported", t.pos);
  return SyntaxError();
}

// An identifier usable as a name (unquoted non-reserved or quoted).
Result<std::string> Parser::Name() {
  const Token& t = Peek();
  if (t.kind == Tok::kQuotedIdent || (t.kind == Tok::kIdent && !kReserved.count(t.text))) {
    i_++;
    return t.text;
  }
  return SyntaxError();
}

Result<std::vector<std::string>> Parser::QualifiedNameList() {
  std::vector<std::string> out;
  do {
    ASSIGN_OR_RETURN(std::string n, QualifiedName());
    out.push_back(std::move(n));
  } while (AcceptOp(","));
  return out;
}

Result<std::string> Parser::QualifiedName() {
  ASSIGN_OR_RETURN(std::string n, Name());
  // Accept schema-qualified names of the user schema, public, and of pg_catalog.
  if (Peek().IsOp(".") && (n == "public" || n == "pg_catalog")) {
    i_++;
    return Name();
  }
  return n;
}

Result<uint64_t> Parser::UnsignedInt() {
  const Token& t = Peek();
  uint64_t v = 0;
  if (t.kind != Tok::kInteger) return SyntaxError();
  auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
  if (ec != std::errc())
    return Status::Sql(sqlstate::kNumericValueOutOfRange, "number out of range", t.pos);
  i_++;
  return v;
}

std::string Parser::SourceText(int from, int to) const {
  // Token positions count characters; find their byte offsets.
  auto byte_of = [&](int pos) {
    size_t i = 0;
    for (int c = 1; i < src_.size(); i++) {
      if ((static_cast<unsigned char>(src_[i]) & 0xC0) == 0x80) continue;
      if (c++ == pos) return i;
    }
    return src_.size();
  };
  size_t a = byte_of(from);
  size_t b = byte_of(to);
  std::string s(src_.substr(a, b > a ? b - a : 0));
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\n' || s.back() == '\t' || s.back() == '\r'))
    s.pop_back();
  return s;
}

Result<ExprPtr> Parser::ParseWholeExpr() {
  ASSIGN_OR_RETURN(ExprPtr e, ParseExpr());
  if (Peek().kind != Tok::kEnd) return SyntaxError();
  return e;
}

Result<Statement> Parser::ParseStatement() {
  const Token& t = Peek();
  if (t.Is("select") || (t.IsOp("(") && IsSelectAhead())) {
    ASSIGN_OR_RETURN(SelectStmt s, ParseSelect());
    return Statement(std::move(s));
  }
  if (t.Is("create")) return ParseCreate();
  if (t.Is("drop")) return ParseDrop();
  if (t.Is("insert")) return ParseInsert();
  if (t.Is("update")) return ParseUpdate();
  if (t.Is("delete")) return ParseDelete();
  if (t.Is("alter")) return ParseAlter();
  if (t.Is("begin") || t.Is("start")) return ParseBegin();
  if (t.Is("commit") || t.Is("end")) {
    i_++;
    if (!Accept("transaction")) Accept("work");
    return Statement(TxnStmt{TxnStmt::Kind::kCommit});
  }
  if (t.Is("rollback") || t.Is("abort")) {
    i_++;
    if (!Accept("transaction")) Accept("work");
    return Statement(TxnStmt{TxnStmt::Kind::kRollback});
  }
  if (t.Is("set")) return ParseSet();
  if (t.Is("show")) return ParseShow();
  if (t.Is("vacuum")) return ParseVacuum();
  if (t.Is("analyze") || t.Is("analyse")) return ParseAnalyze();
  if (t.Is("copy")) return ParseCopy();
  if (t.Is("explain")) return ParseExplain();
  if (t.Is("truncate")) return ParseTruncate();
  static const std::set<std::string> kKnownUnsupported = {
      "grant", "revoke",    "prepare", "execute", "deallocate", "with",   "values",
      "table", "savepoint", "release", "lock",    "listen",     "notify", "discard",
      "reset", "comment",   "cluster", "reindex", "checkpoint"};
  if (t.kind == Tok::kIdent && kKnownUnsupported.count(t.text)) {
    return Status::Sql(sqlstate::kFeatureNotSupported,
                       fmt::format("{} is not supported yet", t.text), t.pos);
  }
  return SyntaxError();
}

Result<Statement> Parser::ParseBegin() {
  const Token& t = Peek();
  i_++;
  if (t.Is("start"))
    RETURN_NOT_OK(Expect("transaction"));
  else if (!Accept("transaction"))
    Accept("work");
  TxnStmt b{TxnStmt::Kind::kBegin};
  RETURN_NOT_OK(ParseTxnModes(&b));
  return Statement(std::move(b));
}

Result<Statement> Parser::ParseShow() {
  i_++;
  ShowStmt s;
  if (Peek().kind != Tok::kIdent) return SyntaxError();
  s.name = Next().text;
  while (AcceptOp(".")) s.name += "." + Next().text;
  return Statement(std::move(s));
}

Result<Statement> Parser::ParseVacuum() {
  i_++;
  VacuumStmt v;
  v.pos = Peek().pos;
  while (true) {
    if (Accept("analyze") || Accept("analyse")) {
      v.analyze = true;
    } else if (!(Accept("full") || Accept("freeze") || Accept("verbose"))) {
      break;
    }
  }
  if (AcceptOp("(")) {  // VACUUM (options)
    while (Peek().kind != Tok::kEnd && !Peek().IsOp(")")) i_++;
    RETURN_NOT_OK(ExpectOp(")"));
  }
  if (Peek().kind == Tok::kIdent || Peek().kind == Tok::kQuotedIdent) {
    ASSIGN_OR_RETURN(v.names, QualifiedNameList());
  }
  return Statement(std::move(v));
}

Result<Statement> Parser::ParseAnalyze() {
  i_++;
  VacuumStmt v;
  v.analyze = v.only_analyze = true;
  v.pos = Peek().pos;
  Accept("verbose");
  if (Peek().kind == Tok::kIdent || Peek().kind == Tok::kQuotedIdent) {
    ASSIGN_OR_RETURN(v.names, QualifiedNameList());
  }
  return Statement(std::move(v));
}

Result<Statement> Parser::ParseExplain() {
  i_++;
  ExplainStmt e;
  e.pos = Peek().pos;
  if (AcceptOp("(")) {  // EXPLAIN (ANALYZE [true|false], ...) form
    do {
      if (Peek().kind != Tok::kIdent) return SyntaxError();
      std::string opt = Next().text;
      bool on = !(Accept("false") || Accept("off"));
      Accept("true") || Accept("on");
      if (opt == "analyze") e.analyze = on;
    } while (AcceptOp(","));
    RETURN_NOT_OK(ExpectOp(")"));
  } else {
    e.analyze = Accept("analyze") || Accept("analyse");
    Accept("verbose");
  }
  ASSIGN_OR_RETURN(Statement inner, ParseStatement());
  e.inner = std::make_shared<StatementBox>(StatementBox{std::move(inner)});
  return Statement(std::move(e));
}

Result<Statement> Parser::ParseTruncate() {
  i_++;
  Accept("table");
  TruncateStmt s;
  s.pos = Peek().pos;
  ASSIGN_OR_RETURN(s.names, QualifiedNameList());
  return Statement(std::move(s));
}

Result<Statement> Parser::ParseCopy() {
  i_++;
  CopyStmt c;
  c.table_pos = Peek().pos;
  if (Peek().IsOp("("))
    return Status::Sql(sqlstate::kFeatureNotSupported,
                       "COPY (query) TO is not supported; copy a table", Peek().pos);
  ASSIGN_OR_RETURN(c.table, QualifiedName());
  if (AcceptOp("(")) {
    do {
      ASSIGN_OR_RETURN(std::string col, Name());
      c.columns.push_back(col);
    } while (AcceptOp(","));
    RETURN_NOT_OK(ExpectOp(")"));
  }
  if (Accept("from")) {
    c.from = true;
    if (!Accept("stdin")) {
      return Status::Sql(sqlstate::kFeatureNotSupported,
                         "COPY FROM supports only STDIN (files are read by the client)",
                         Peek().pos);
    }
  } else if (Accept("to")) {
    c.from = false;
    if (!Accept("stdout"))
      return Status::Sql(sqlstate::kFeatureNotSupported, "COPY TO supports only STDOUT",
                         Peek().pos);
  } else {
    return SyntaxError();
  }
  Accept("with");
  auto option = [&](const std::string& name) -> Status {
    if (name == "format") {
      if (Peek().Is("csv"))
        c.csv = true;
      else if (!Peek().Is("text"))
        return Status::Sql(sqlstate::kFeatureNotSupported,
                           fmt::format("COPY format \"{}\" is not supported", Peek().text),
                           Peek().pos);
      i_++;
    } else if (name == "csv") {
      c.csv = true;
    } else if (name == "header") {
      c.header = !(Accept("false") || Accept("off"));
      Accept("true") || Accept("on");
    } else if (name == "delimiter") {
      if (Peek().kind != Tok::kString || Peek().text.size() != 1) {
        return Status::Sql(sqlstate::kInvalidParameterValue,
                           "COPY delimiter must be a single one-byte character", Peek().pos);
      }
      c.delimiter = Next().text[0];
    } else if (name == "null") {
      if (Peek().kind != Tok::kString) return SyntaxError();
      c.null_string = Next().text;
    } else if (name == "freeze") {
      Accept("true") || Accept("on") || Accept("false") || Accept("off");
    } else if (name == "encoding") {
      if (Peek().kind != Tok::kString) return SyntaxError();
      i_++;
    } else {
      return Status::Sql(sqlstate::kSyntaxError, fmt::format("option \"{}\" not recognized", name),
                         Peek().pos);
    }
    return Status::OK();
  };
  if (AcceptOp("(")) {
    do {
      if (Peek().kind != Tok::kIdent) return SyntaxError();
      RETURN_NOT_OK(option(Next().text));
    } while (AcceptOp(","));
    RETURN_NOT_OK(ExpectOp(")"));
  } else {
    while (Peek().kind == Tok::kIdent &&
           (Peek().Is("csv") || Peek().Is("header") || Peek().Is("delimiter") ||
            Peek().Is("null") || Peek().Is("freeze"))) {
      std::string name = Next().text;
      if (name == "delimiter" || name == "null") Accept("as");
      RETURN_NOT_OK(option(name));
    }
  }
  if (c.csv && c.null_string == "\\N") c.null_string = "";
  if (c.csv && c.delimiter == '\t') c.delimiter = ',';
  return Statement(std::move(c));
}

Status Parser::ParseTxnModes(TxnStmt* t) {
  bool first = true;
  while (Peek().kind != Tok::kEnd && !Peek().IsOp(";")) {
    if (!first) AcceptOp(",");
    first = false;
    if (Accept("isolation")) {
      RETURN_NOT_OK(Expect("level"));
      if (Accept("serializable")) {
        t->isolation = "serializable";
      } else if (Accept("repeatable")) {
        RETURN_NOT_OK(Expect("read"));
        t->isolation = "repeatable read";
      } else if (Accept("read")) {
        if (Accept("committed")) {
          t->isolation = "read committed";
        } else {
          RETURN_NOT_OK(Expect("uncommitted"));
          t->isolation = "read uncommitted";
        }
      } else {
        return SyntaxError();
      }
    } else if (Accept("read")) {
      if (Accept("only")) {
        t->read_only = true;
      } else {
        RETURN_NOT_OK(Expect("write"));
        t->read_only = false;
      }
    } else if (Accept("not")) {
      RETURN_NOT_OK(Expect("deferrable"));
    } else if (!Accept("deferrable")) {
      return SyntaxError();
    }
  }
  return Status::OK();
}

Result<Statement> Parser::ParseSet() {
  i_++;
  SetStmt s;
  // SET TRANSACTION <modes> and SET SESSION CHARACTERISTICS AS TRANSACTION <modes> become
  // settings of transaction_isolation / default_transaction_isolation.
  bool characteristics = false;
  if (Accept("session")) {
    if (Accept("characteristics")) {
      RETURN_NOT_OK(Expect("as"));
      characteristics = true;
    }
  }
  if (characteristics || Peek().Is("transaction")) {
    RETURN_NOT_OK(Expect("transaction"));
    TxnStmt modes{TxnStmt::Kind::kBegin};
    RETURN_NOT_OK(ParseTxnModes(&modes));
    if (modes.isolation.empty()) modes.isolation = "default";  // only READ WRITE etc.: no change
    s.name = characteristics ? "default_transaction_isolation" : "transaction_isolation";
    s.value = modes.isolation;
    return Statement(std::move(s));
  }
  Accept("local");
  if (Peek().kind != Tok::kIdent) return SyntaxError();
  s.name = Next().text;
  while (AcceptOp(".")) s.name += "." + Next().text;
  if (!AcceptOp("=") && !Accept("to")) return SyntaxError();
  // Values: identifiers, strings, numbers, comma lists; kept as text.
  bool first = true;
  while (Peek().kind != Tok::kEnd && !Peek().IsOp(";")) {
    const Token& v = Next();
    if (!first && v.text != ",") s.value += v.IsOp(",") ? "" : " ";
    s.value += v.text;
    first = false;
  }
  if (first) return SyntaxError();
  return Statement(std::move(s));
}

Result<Statement> Parser::ParseInsert() {
  i_++;
  RETURN_NOT_OK(Expect("into"));
  InsertStmt s;
  s.table_pos = Peek().pos;
  ASSIGN_OR_RETURN(s.table, QualifiedName());
  if (AcceptOp("(")) {
    do {
      s.column_pos.push_back(Peek().pos);
      ASSIGN_OR_RETURN(std::string c, Name());
      s.columns.push_back(c);
    } while (AcceptOp(","));
    RETURN_NOT_OK(ExpectOp(")"));
  }
  if (Peek().Is("select") || (Peek().IsOp("(") && IsSelectAhead())) {
    s.select = std::make_unique<SelectStmt>();
    ASSIGN_OR_RETURN(*s.select, ParseSelect());
    return Statement(std::move(s));
  }
  RETURN_NOT_OK(Expect("values"));
  do {
    RETURN_NOT_OK(ExpectOp("("));
    std::vector<ExprPtr> row;
    do {
      ASSIGN_OR_RETURN(ExprPtr e, ParseExpr());
      row.push_back(std::move(e));
    } while (AcceptOp(","));
    RETURN_NOT_OK(ExpectOp(")"));
    s.rows.push_back(std::move(row));
  } while (AcceptOp(","));
  return Statement(std::move(s));
}

Result<Statement> Parser::ParseUpdate() {
  i_++;
  UpdateStmt s;
  s.table_pos = Peek().pos;
  ASSIGN_OR_RETURN(s.table, QualifiedName());
  RETURN_NOT_OK(Expect("set"));
  do {
    s.set_pos.push_back(Peek().pos);
    ASSIGN_OR_RETURN(std::string c, Name());
    RETURN_NOT_OK(ExpectOp("="));
    ASSIGN_OR_RETURN(ExprPtr e, ParseExpr());
    s.sets.emplace_back(c, std::move(e));
  } while (AcceptOp(","));
  if (Accept("where")) {
    ASSIGN_OR_RETURN(s.where, ParseExpr());
  }
  return Statement(std::move(s));
}

Result<Statement> Parser::ParseDelete() {
  i_++;
  RETURN_NOT_OK(Expect("from"));
  DeleteStmt s;
  s.table_pos = Peek().pos;
  ASSIGN_OR_RETURN(s.table, QualifiedName());
  if (Accept("as")) {
    ASSIGN_OR_RETURN(s.alias, Name());
  } else if (Peek().kind == Tok::kIdent && !kReserved.count(Peek().text)) {
    s.alias = Next().text;
  }
  if (Accept("where")) {
    ASSIGN_OR_RETURN(s.where, ParseExpr());
  }
  return Statement(std::move(s));
}

}  // namespace internal

using internal::Parser;

int MaxParamIndex(const std::string& sql) {
  auto toks = Lex(sql);
  if (!toks.ok()) return 0;
  int max = 0;
  for (const auto& t : *toks) {
    if (t.kind == Tok::kParam) {
      int v = 0;
      std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
      max = std::max(max, v);
    }
  }
  return max;
}

Result<ExprPtr> ParseExpression(const std::string& sql) {
  ASSIGN_OR_RETURN(std::vector<Token> toks, Lex(sql));
  Parser p(std::move(toks), sql);
  return p.ParseWholeExpr();
}

Result<std::vector<Statement>> Parse(const std::string& sql) {
  ASSIGN_OR_RETURN(std::vector<Token> toks, Lex(sql));
  Parser p(std::move(toks), sql);
  return p.ParseAll();
}

}  // namespace wattdb::sql
