#include "query/sql/parser.h"

#include <charconv>
#include <map>

#include "query/sql/parser_internal.h"

namespace wattdb::sql {
namespace internal {

const std::set<std::string> kReserved = {
    "all",    "and",   "as",     "asc",    "between", "by",    "case",   "cast",   "create",
    "delete", "desc",  "distinct", "drop", "else",    "end",   "except", "false",  "from",
    "group",  "having", "in",    "insert", "intersect", "into", "is",    "join",   "left",
    "like",   "limit", "not",    "null",   "nulls",   "offset", "on",    "or",     "order",
    "primary", "select", "set",  "table",  "then",    "to",    "true",   "union",  "update",
    "using",  "values", "when",  "where",  "with",    "inner", "outer",  "right",  "cross",
    "full",   "ilike", "returning", "fetch", "window", "for"};

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
  static const std::map<std::string, std::string> kClauses = {
      {"returning", "RETURNING"}, {"on", "ON CONFLICT"}, {"window", "WINDOW"},
      {"tablesample", "TABLESAMPLE"}, {"over", "window functions (OVER)"}};
  if (t.kind == Tok::kIdent) {
    if (auto it = kClauses.find(t.text); it != kClauses.end()) {
      return Status::Sql("0A000", fmt::format("{} is not supported yet", it->second), t.pos);
    }
  }
  if (t.IsOp("[")) return Status::Sql("0A000", "multidimensional arrays and array slices are not supported", t.pos);
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
  if (ec != std::errc()) return Status::Sql("22003", "number out of range", t.pos);
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
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
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
  if (t.Is("begin") || t.Is("start")) {
    i_++;
    if (t.Is("start")) RETURN_NOT_OK(Expect("transaction"));
    else if (!Accept("transaction")) Accept("work");
    return Statement(TxnStmt{TxnStmt::Kind::kBegin});
  }
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
  if (t.Is("show")) {
    i_++;
    ShowStmt s;
    if (Peek().kind != Tok::kIdent) return SyntaxError();
    s.name = Next().text;
    while (AcceptOp(".")) s.name += "." + Next().text;
    return Statement(std::move(s));
  }
  if (t.Is("vacuum")) {
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
  if (t.Is("analyze") || t.Is("analyse")) {
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
  if (t.Is("copy")) return ParseCopy();
  if (t.Is("explain")) {
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
  if (t.Is("truncate")) {
    i_++;
    Accept("table");
    TruncateStmt s;
    s.pos = Peek().pos;
    ASSIGN_OR_RETURN(s.names, QualifiedNameList());
    return Statement(std::move(s));
  }
  static const std::set<std::string> kKnownUnsupported = {
      "grant", "revoke", "prepare",
      "execute", "deallocate", "with", "values", "table", "savepoint", "release", "lock",
      "listen", "notify", "discard", "reset", "comment", "cluster", "reindex", "checkpoint"};
  if (t.kind == Tok::kIdent && kKnownUnsupported.count(t.text)) {
    return Status::Sql("0A000", fmt::format("{} is not supported yet", t.text), t.pos);
  }
  return SyntaxError();
}

Result<Statement> Parser::ParseCopy() {
  i_++;
  CopyStmt c;
  c.table_pos = Peek().pos;
  if (Peek().IsOp("(")) return Status::Sql("0A000", "COPY (query) TO is not supported; copy a table", Peek().pos);
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
      return Status::Sql("0A000", "COPY FROM supports only STDIN (files are read by the client)", Peek().pos);
    }
  } else if (Accept("to")) {
    c.from = false;
    if (!Accept("stdout")) return Status::Sql("0A000", "COPY TO supports only STDOUT", Peek().pos);
  } else {
    return SyntaxError();
  }
  Accept("with");
  auto option = [&](const std::string& name) -> Status {
    if (name == "format") {
      if (Peek().Is("csv")) c.csv = true;
      else if (!Peek().Is("text")) return Status::Sql("0A000", fmt::format("COPY format \"{}\" is not supported", Peek().text), Peek().pos);
      i_++;
    } else if (name == "csv") {
      c.csv = true;
    } else if (name == "header") {
      c.header = !(Accept("false") || Accept("off"));
      Accept("true") || Accept("on");
    } else if (name == "delimiter") {
      if (Peek().kind != Tok::kString || Peek().text.size() != 1) {
        return Status::Sql("22023", "COPY delimiter must be a single one-byte character", Peek().pos);
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
      return Status::Sql("42601", fmt::format("option \"{}\" not recognized", name), Peek().pos);
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
    while (Peek().kind == Tok::kIdent && (Peek().Is("csv") || Peek().Is("header") || Peek().Is("delimiter") ||
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

Result<Statement> Parser::ParseSet() {
  i_++;
  SetStmt s;
  Accept("session");
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

Result<SqlType> Parser::ParseType() {
  if (Peek().Is("pg_catalog") && Peek(1).IsOp(".")) i_ += 2;
  if (Peek().kind == Tok::kQuotedIdent && Peek().text == "char") {  // "char": one byte, as text
    i_++;
    return ArraySuffix(SqlType{TypeId::kText});
  }
  ASSIGN_OR_RETURN(SqlType t, ParseBaseType());
  return ArraySuffix(t);
}

Result<SqlType> Parser::ArraySuffix(SqlType t) {
  while (Peek().IsOp("[")) {
    int pos = Next().pos;
    if (Peek().kind == Tok::kInteger) i_++;
    RETURN_NOT_OK(ExpectOp("]"));
    if (t.id == TypeId::kArray) return Status::Sql("0A000", "multidimensional arrays are not supported", pos);
    t = SqlType::Array(t.id);
  }
  return t;
}

Result<SqlType> Parser::ParseBaseType() {
  const Token& t = Peek();
  if (t.kind != Tok::kIdent) return SyntaxError();
  std::string n = Next().text;
  if (n == "oid" || n == "xid" || n == "cid") return SqlType{TypeId::kInt64};
  if (n == "name") return SqlType{TypeId::kText};
  if (n == "int2vector") return SqlType::Array(TypeId::kInt32);
  if (n == "oidvector") return SqlType::Array(TypeId::kInt64);
  auto length = [&]() -> Result<int32_t> {
    if (!AcceptOp("(")) return 0;
    ASSIGN_OR_RETURN(uint64_t len, UnsignedInt());
    RETURN_NOT_OK(ExpectOp(")"));
    if (len == 0 || len > 10485760) {
      return Status::Sql("22023", "length for type varchar must be between 1 and 10485760", t.pos);
    }
    return static_cast<int32_t>(len);
  };
  if (n == "int" || n == "integer" || n == "int4" || n == "smallint" || n == "int2") {
    return SqlType{TypeId::kInt32};
  }
  if (n == "bigint" || n == "int8") return SqlType{TypeId::kInt64};
  if (n == "double") {
    RETURN_NOT_OK(Expect("precision"));
    return SqlType{TypeId::kDouble};
  }
  if (n == "float8" || n == "float" || n == "real" || n == "float4") {
    if (AcceptOp("(")) {
      RETURN_NOT_OK(UnsignedInt().status());
      RETURN_NOT_OK(ExpectOp(")"));
    }
    return SqlType{TypeId::kDouble};
  }
  if (n == "text") return SqlType{TypeId::kText};
  if (n == "numeric" || n == "decimal" || n == "dec") {
    if (!AcceptOp("(")) return SqlType{TypeId::kNumeric};
    int pos = Peek().pos;
    ASSIGN_OR_RETURN(uint64_t precision, UnsignedInt());
    uint64_t scale = 0;
    if (AcceptOp(",")) {
      ASSIGN_OR_RETURN(scale, UnsignedInt());
    }
    RETURN_NOT_OK(ExpectOp(")"));
    if (precision < 1 || precision > 1000) {
      return Status::Sql("22023", fmt::format("NUMERIC precision {} must be between 1 and 1000", precision), pos);
    }
    if (precision > static_cast<uint64_t>(kMaxDecimalDigits)) {
      return Status::Sql("0A000", fmt::format("NUMERIC precision {} is beyond the supported {}", precision,
                                              kMaxDecimalDigits), pos);
    }
    if (scale > precision) {
      return Status::Sql("22023", fmt::format("NUMERIC scale {} must be between 0 and precision {}", scale, precision),
                         pos);
    }
    return SqlType::Numeric(static_cast<int>(precision), static_cast<int>(scale));
  }
  if (n == "varchar") {
    ASSIGN_OR_RETURN(int32_t len, length());
    return SqlType{TypeId::kText, len};
  }
  if (n == "character" && Accept("varying")) {
    ASSIGN_OR_RETURN(int32_t len, length());
    return SqlType{TypeId::kText, len};
  }
  if (n == "character" || n == "char" || n == "bpchar") {
    ASSIGN_OR_RETURN(int32_t len, length());
    return SqlType{TypeId::kText, -(len == 0 ? 1 : len)};
  }
  if (n == "boolean" || n == "bool") return SqlType{TypeId::kBool};
  if (n == "timestamp") {
    if (AcceptOp("(")) {  // precision: accepted; values keep microseconds
      RETURN_NOT_OK(UnsignedInt().status());
      RETURN_NOT_OK(ExpectOp(")"));
    }
    if (Accept("without")) {
      RETURN_NOT_OK(Expect("time"));
      RETURN_NOT_OK(Expect("zone"));
    } else if (Peek().Is("with")) {
      return Status::Sql("0A000", "type timestamp with time zone is not supported", Peek().pos);
    }
    return SqlType{TypeId::kTimestamp};
  }
  if (n == "timestamptz" || n == "date") {
    return Status::Sql("0A000", fmt::format("type {} is not supported yet", n), t.pos);
  }
  return Status::Sql("42704", fmt::format("type \"{}\" does not exist", n), t.pos);
}

Result<Statement> Parser::ParseCreate() {
  i_++;
  bool or_replace = false;
  if (Accept("or")) {
    RETURN_NOT_OK(Expect("replace"));
    or_replace = true;
  }
  if (Accept("view")) {
    CreateViewStmt v;
    v.or_replace = or_replace;
    v.pos = Peek().pos;
    ASSIGN_OR_RETURN(v.name, QualifiedName());
    if (Peek().IsOp("(")) return Status::Sql("0A000", "view column lists are not supported", Peek().pos);
    RETURN_NOT_OK(Expect("as"));
    int start = Peek().pos;
    v.query = std::make_shared<SelectStmt>();
    ASSIGN_OR_RETURN(*v.query, ParseSelect());
    v.sql = SourceText(start, Peek().pos);
    return Statement(std::move(v));
  }
  if (or_replace) return SyntaxError();
  if (Accept("database")) {
    DatabaseStmt d;
    ASSIGN_OR_RETURN(d.name, Name());
    // Options (OWNER, ENCODING, TEMPLATE, ...) are accepted and ignored.
    while (Peek().kind != Tok::kEnd && !Peek().IsOp(";")) i_++;
    return Statement(std::move(d));
  }
  if (Accept("user") || Accept("role")) {
    UserStmt u;
    ASSIGN_OR_RETURN(u.name, Name());
    RETURN_NOT_OK(ParseUserOptions(&u));
    return Statement(std::move(u));
  }
  if (Peek().Is("unique") || Peek().Is("index")) return ParseCreateIndex();
  if (!Accept("table")) {
    return Status::Sql("0A000", fmt::format("CREATE {} is not supported", Peek().text), Peek().pos);
  }
  CreateTableStmt s;
  if (Accept("if")) {
    RETURN_NOT_OK(Expect("not"));
    RETURN_NOT_OK(Expect("exists"));
    s.if_not_exists = true;
  }
  ASSIGN_OR_RETURN(s.name, QualifiedName());
  RETURN_NOT_OK(ExpectOp("("));
  do {
    std::string constraint;
    if (Accept("constraint")) {
      ASSIGN_OR_RETURN(constraint, Name());
    }
    if (Peek().Is("unique")) {
      UniqueDef u{constraint, {}, Peek().pos};
      i_++;
      RETURN_NOT_OK(ExpectOp("("));
      ASSIGN_OR_RETURN(u.columns, QualifiedNameList());
      RETURN_NOT_OK(ExpectOp(")"));
      s.unique.push_back(std::move(u));
      continue;
    }
    if (!constraint.empty() && !Peek().Is("primary")) {
      return Status::Sql("0A000", fmt::format("table constraint {} is not supported", Peek().text), Peek().pos);
    }
    if (Peek().Is("primary")) {
      s.pk_pos = Peek().pos;
      i_++;
      RETURN_NOT_OK(Expect("key"));
      if (!s.primary_key.empty()) {
        return Status::Sql("42P16", "multiple primary keys for table are not allowed", s.pk_pos);
      }
      RETURN_NOT_OK(ExpectOp("("));
      do {
        ASSIGN_OR_RETURN(std::string c, Name());
        s.primary_key.push_back(c);
      } while (AcceptOp(","));
      RETURN_NOT_OK(ExpectOp(")"));
      continue;
    }
    ColumnDef c;
    c.pos = Peek().pos;
    ASSIGN_OR_RETURN(c.name, Name());
    if (Accept("serial") || Accept("serial4") || Accept("smallserial") || Accept("serial2")) {
      c.type = SqlType{TypeId::kInt32};
      c.serial = c.not_null = true;
    } else if (Accept("bigserial") || Accept("serial8")) {
      c.type = SqlType{TypeId::kInt64};
      c.serial = c.not_null = true;
    } else {
      ASSIGN_OR_RETURN(c.type, ParseType());
    }
    while (true) {
      if (Accept("not")) {
        RETURN_NOT_OK(Expect("null"));
        c.not_null = true;
      } else if (Accept("null")) {
      } else if (Peek().Is("default")) {
        i_++;
        int start = Peek().pos;
        ASSIGN_OR_RETURN(ExprPtr d, ParseExpr());
        c.default_sql = SourceText(start, Peek().pos);
        c.default_pos = start;
      } else if (Peek().Is("unique")) {
        s.unique.push_back(UniqueDef{"", {c.name}, Peek().pos});
        i_++;
      } else if (Peek().Is("check") || Peek().Is("references") || Peek().Is("constraint") ||
                 Peek().Is("generated")) {
        return Status::Sql("0A000", fmt::format("column constraint {} is not supported yet",
                                                Peek().text), Peek().pos);
      } else if (Peek().Is("primary")) {
        int p = Peek().pos;
        i_++;
        RETURN_NOT_OK(Expect("key"));
        if (!s.primary_key.empty()) {
          return Status::Sql("42P16", "multiple primary keys for table are not allowed", p);
        }
        c.primary_key = true;
        s.primary_key.push_back(c.name);
        s.pk_pos = p;
      } else {
        break;
      }
    }
    s.columns.push_back(std::move(c));
  } while (AcceptOp(","));
  RETURN_NOT_OK(ExpectOp(")"));
  RETURN_NOT_OK(SkipStorageParameters());
  return Statement(std::move(s));
}

Status Parser::SkipStorageParameters() {
  if (!Accept("with")) return Status::OK();
  RETURN_NOT_OK(ExpectOp("("));
  int depth = 1;
  while (depth > 0 && Peek().kind != Tok::kEnd) {
    if (Peek().IsOp("(")) depth++;
    if (Peek().IsOp(")")) depth--;
    i_++;
  }
  return Status::OK();
}

Result<Statement> Parser::ParseCreateIndex() {
  CreateIndexStmt s;
  s.pos = Peek().pos;
  s.unique = Accept("unique");
  RETURN_NOT_OK(Expect("index"));
  Accept("concurrently");
  if (Accept("if")) {
    RETURN_NOT_OK(Expect("not"));
    RETURN_NOT_OK(Expect("exists"));
    s.if_not_exists = true;
  }
  if (!Peek().Is("on")) {
    ASSIGN_OR_RETURN(s.name, Name());
  }
  RETURN_NOT_OK(Expect("on"));
  Accept("only");
  s.table_pos = Peek().pos;
  ASSIGN_OR_RETURN(s.table, QualifiedName());
  if (Accept("using")) {
    ASSIGN_OR_RETURN(std::string method, Name());
    if (method != "btree") {
      return Status::Sql("0A000", fmt::format("index access method \"{}\" is not supported", method), Peek().pos);
    }
  }
  RETURN_NOT_OK(ExpectOp("("));
  do {
    if (Peek().kind != Tok::kIdent) {
      return Status::Sql("0A000", "indexes on expressions are not supported", Peek().pos);
    }
    ASSIGN_OR_RETURN(std::string c, Name());
    if (Peek().IsOp("(")) return Status::Sql("0A000", "indexes on expressions are not supported", Peek().pos);
    s.columns.push_back(std::move(c));
    bool desc = Accept("desc");
    if (!desc) Accept("asc");
    s.desc.push_back(desc);
    if (Accept("nulls") && !Accept("first")) RETURN_NOT_OK(Expect("last"));
  } while (AcceptOp(","));
  RETURN_NOT_OK(ExpectOp(")"));
  if (Accept("include") || Peek().Is("where")) {
    return Status::Sql("0A000", "partial indexes and INCLUDE columns are not supported", Peek().pos);
  }
  RETURN_NOT_OK(SkipStorageParameters());
  return Statement(std::move(s));
}

Status Parser::ParseUserOptions(UserStmt* u) {
  Accept("with");
  while (Peek().kind == Tok::kIdent) {
    if (Accept("password")) {
      if (Accept("null")) {
        u->password.reset();
        continue;
      }
      if (Peek().kind != Tok::kString) return SyntaxError();
      u->password = Next().text;
    } else if (Peek().Is("login") || Peek().Is("nologin") || Peek().Is("superuser") ||
               Peek().Is("nosuperuser") || Peek().Is("createdb") || Peek().Is("nocreatedb") ||
               Peek().Is("inherit") || Peek().Is("noinherit")) {
      i_++;  // role attributes: every user may do everything
    } else {
      return Status::Sql("0A000", fmt::format("role option {} is not supported", Peek().text), Peek().pos);
    }
  }
  return Status::OK();
}

Result<Statement> Parser::ParseDrop() {
  i_++;
  if (Accept("database")) {
    DatabaseStmt d;
    d.create = false;
    if (Accept("if")) {
      RETURN_NOT_OK(Expect("exists"));
      d.if_exists = true;
    }
    ASSIGN_OR_RETURN(d.name, Name());
    if (AcceptOp("(")) {  // WITH (FORCE) is not offered: sessions must leave first
      return Status::Sql("0A000", "DROP DATABASE options are not supported", Peek().pos);
    }
    return Statement(std::move(d));
  }
  if (Accept("user") || Accept("role")) {
    UserStmt u;
    u.kind = UserStmt::Kind::kDrop;
    if (Accept("if")) {
      RETURN_NOT_OK(Expect("exists"));
      u.if_exists = true;
    }
    ASSIGN_OR_RETURN(u.name, Name());
    return Statement(std::move(u));
  }
  DropTableStmt s;
  s.view = Accept("view");
  s.index = !s.view && Accept("index");
  if (s.index) Accept("concurrently");
  if (!s.view && !s.index && !Accept("table")) {
    return Status::Sql("0A000", fmt::format("DROP {} is not supported", Peek().text), Peek().pos);
  }
  if (Accept("if")) {
    RETURN_NOT_OK(Expect("exists"));
    s.if_exists = true;
  }
  ASSIGN_OR_RETURN(s.names, QualifiedNameList());
  s.cascade = Accept("cascade");
  if (!s.cascade) Accept("restrict");
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

Result<Statement> Parser::ParseAlter() {
  i_++;
  if (Accept("user") || Accept("role")) {
    UserStmt u;
    u.kind = UserStmt::Kind::kAlter;
    ASSIGN_OR_RETURN(u.name, Name());
    RETURN_NOT_OK(ParseUserOptions(&u));
    return Statement(std::move(u));
  }
  if (Accept("table")) {
    MoveSegmentStmt s;
    ASSIGN_OR_RETURN(s.table, QualifiedName());
    if (Peek().Is("add")) {
      AddPrimaryKeyStmt a;
      a.table = s.table;
      a.pos = Next().pos;
      if (Accept("constraint")) RETURN_NOT_OK(Name().status());
      if (!Peek().Is("primary")) {
        return Status::Sql("0A000", "ALTER TABLE ... ADD supports only PRIMARY KEY", Peek().pos);
      }
      i_++;
      RETURN_NOT_OK(Expect("key"));
      RETURN_NOT_OK(ExpectOp("("));
      do {
        ASSIGN_OR_RETURN(std::string c, Name());
        a.columns.push_back(c);
      } while (AcceptOp(","));
      RETURN_NOT_OK(ExpectOp(")"));
      return Statement(std::move(a));
    }
    if (!Peek().Is("move")) {
      return Status::Sql("0A000", "ALTER TABLE supports only ADD PRIMARY KEY and MOVE SEGMENT <id> TO NODE <id>",
                         Peek().pos);
    }
    i_++;
    RETURN_NOT_OK(Expect("segment"));
    ASSIGN_OR_RETURN(s.segment, UnsignedInt());
    RETURN_NOT_OK(Expect("to"));
    RETURN_NOT_OK(Expect("node"));
    ASSIGN_OR_RETURN(uint64_t n, UnsignedInt());
    s.node = static_cast<uint32_t>(n);
    return Statement(std::move(s));
  }
  if (Accept("node")) {
    AlterNodeStmt s;
    ASSIGN_OR_RETURN(uint64_t n, UnsignedInt());
    s.node = static_cast<uint32_t>(n);
    if (Accept("drain")) {
      s.action = AlterNodeStmt::Action::kDrain;
    } else if (Accept("power")) {
      if (Accept("on")) {
        s.action = AlterNodeStmt::Action::kPowerOn;
      } else if (Accept("off")) {
        s.action = AlterNodeStmt::Action::kPowerOff;
      } else {
        return SyntaxError();
      }
    } else {
      return SyntaxError();
    }
    return Statement(std::move(s));
  }
  return Status::Sql("0A000", fmt::format("ALTER {} is not supported", Peek().text), Peek().pos);
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
