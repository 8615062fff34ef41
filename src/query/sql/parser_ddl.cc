// Parsing of types and of DDL statements: CREATE TABLE | INDEX | VIEW | DATABASE | USER,
// DROP ..., ALTER TABLE | NODE.
#include <map>

#include "common/schema.h"
#include "common/sqlstate.h"
#include "query/sql/parser_internal.h"

namespace wattdb::sql::internal {

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
    if (t.id == TypeId::kArray)
      return Status::Sql(sqlstate::kFeatureNotSupported,
                         "multidimensional arrays are not supported", pos);
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
      return Status::Sql(sqlstate::kInvalidParameterValue,
                         "length for type varchar must be between 1 and 10485760", t.pos);
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
      return Status::Sql(sqlstate::kInvalidParameterValue,
                         fmt::format("NUMERIC precision {} must be between 1 and 1000", precision),
                         pos);
    }
    if (precision > static_cast<uint64_t>(kMaxDecimalDigits)) {
      return Status::Sql(sqlstate::kFeatureNotSupported,
                         fmt::format("NUMERIC precision {} is beyond the supported {}", precision,
                                     kMaxDecimalDigits),
                         pos);
    }
    if (scale > precision) {
      return Status::Sql(
          sqlstate::kInvalidParameterValue,
          fmt::format("NUMERIC scale {} must be between 0 and precision {}", scale, precision),
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
      return Status::Sql(sqlstate::kFeatureNotSupported,
                         "type timestamp with time zone is not supported", Peek().pos);
    }
    return SqlType{TypeId::kTimestamp};
  }
  if (n == "timestamptz" || n == "date") {
    return Status::Sql(sqlstate::kFeatureNotSupported,
                       fmt::format("type {} is not supported yet", n), t.pos);
  }
  return Status::Sql(sqlstate::kUndefinedObject, fmt::format("type \"{}\" does not exist", n),
                     t.pos);
}

Result<Statement> Parser::ParseCreate() {
  i_++;
  bool or_replace = false;
  if (Accept("or")) {
    RETURN_NOT_OK(Expect("replace"));
    or_replace = true;
  }
  if (Accept("view")) return ParseCreateView(or_replace);
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
    return Status::Sql(sqlstate::kFeatureNotSupported,
                       fmt::format("CREATE {} is not supported", Peek().text), Peek().pos);
  }
  return ParseCreateTable();
}

Result<Statement> Parser::ParseCreateView(bool or_replace) {
  CreateViewStmt v;
  v.or_replace = or_replace;
  v.pos = Peek().pos;
  ASSIGN_OR_RETURN(v.name, QualifiedName());
  if (Peek().IsOp("("))
    return Status::Sql(sqlstate::kFeatureNotSupported, "view column lists are not supported",
                       Peek().pos);
  RETURN_NOT_OK(Expect("as"));
  int start = Peek().pos;
  v.query = std::make_shared<SelectStmt>();
  ASSIGN_OR_RETURN(*v.query, ParseSelect());
  v.sql = SourceText(start, Peek().pos);
  return Statement(std::move(v));
}

Result<Statement> Parser::ParseCreateTable() {
  CreateTableStmt s;
  if (Accept("if")) {
    RETURN_NOT_OK(Expect("not"));
    RETURN_NOT_OK(Expect("exists"));
    s.if_not_exists = true;
  }
  ASSIGN_OR_RETURN(s.name, QualifiedName());
  RETURN_NOT_OK(ExpectOp("("));
  do {
    RETURN_NOT_OK(ParseTableElement(&s));
  } while (AcceptOp(","));
  RETURN_NOT_OK(ExpectOp(")"));
  RETURN_NOT_OK(ParseStorageParameters(&s.replicas));
  return Statement(std::move(s));
}

Status Parser::ParseTableElement(CreateTableStmt* s) {
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
    s->unique.push_back(std::move(u));
    return Status::OK();
  }
  if (!constraint.empty() && !Peek().Is("primary")) {
    return Status::Sql(sqlstate::kFeatureNotSupported,
                       fmt::format("table constraint {} is not supported", Peek().text),
                       Peek().pos);
  }
  if (Peek().Is("primary")) {
    s->pk_pos = Peek().pos;
    i_++;
    RETURN_NOT_OK(Expect("key"));
    if (!s->primary_key.empty()) {
      return Status::Sql(sqlstate::kInvalidTableDefinition,
                         "multiple primary keys for table are not allowed", s->pk_pos);
    }
    RETURN_NOT_OK(ExpectOp("("));
    do {
      ASSIGN_OR_RETURN(std::string c, Name());
      s->primary_key.push_back(c);
    } while (AcceptOp(","));
    RETURN_NOT_OK(ExpectOp(")"));
    return Status::OK();
  }
  return ParseColumnDef(s);
}

Status Parser::ParseColumnDef(CreateTableStmt* s) {
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
      s->unique.push_back(UniqueDef{"", {c.name}, Peek().pos});
      i_++;
    } else if (Peek().Is("check") || Peek().Is("references") || Peek().Is("constraint") ||
               Peek().Is("generated")) {
      return Status::Sql(sqlstate::kFeatureNotSupported,
                         fmt::format("column constraint {} is not supported yet", Peek().text),
                         Peek().pos);
    } else if (Peek().Is("primary")) {
      int p = Peek().pos;
      i_++;
      RETURN_NOT_OK(Expect("key"));
      if (!s->primary_key.empty()) {
        return Status::Sql(sqlstate::kInvalidTableDefinition,
                           "multiple primary keys for table are not allowed", p);
      }
      c.primary_key = true;
      s->primary_key.push_back(c.name);
      s->pk_pos = p;
    } else {
      break;
    }
  }
  s->columns.push_back(std::move(c));
  return Status::OK();
}

Status Parser::SkipStorageParameters() { return ParseStorageParameters(nullptr); }

Status Parser::ParseStorageParameters(uint32_t* replicas) {
  if (!Accept("with")) return Status::OK();
  return ParseStorageParameterList(replicas);
}

Status Parser::ParseStorageParameterList(uint32_t* replicas) {
  RETURN_NOT_OK(ExpectOp("("));
  do {
    ASSIGN_OR_RETURN(std::string name, Name());
    while (AcceptOp(".")) {
      ASSIGN_OR_RETURN(std::string part, Name());
      name += "." + part;
    }
    if (replicas && name == "replicas") {
      RETURN_NOT_OK(ExpectOp("="));
      int pos = Peek().pos;
      ASSIGN_OR_RETURN(uint64_t n, UnsignedInt());
      if (n < 1 || n > TableSchema::kMaxReplicas) {
        return Status::Sql(sqlstate::kInvalidParameterValue,
                           fmt::format("value {} out of bounds for option \"replicas\": valid "
                                       "values are between 1 and {}",
                                       n, TableSchema::kMaxReplicas),
                           pos);
      }
      *replicas = static_cast<uint32_t>(n);
      continue;
    }
    // Other parameters (fillfactor, autovacuum_*, ...) mean nothing here: accepted, ignored.
    if (AcceptOp("=")) {
      AcceptOp("-");
      if (Peek().kind == Tok::kEnd || Peek().IsOp(")") || Peek().IsOp(",")) return SyntaxError();
      i_++;
    }
  } while (AcceptOp(","));
  return ExpectOp(")");
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
      return Status::Sql(sqlstate::kFeatureNotSupported,
                         fmt::format("index access method \"{}\" is not supported", method),
                         Peek().pos);
    }
  }
  RETURN_NOT_OK(ExpectOp("("));
  do {
    if (Peek().kind != Tok::kIdent) {
      return Status::Sql(sqlstate::kFeatureNotSupported, "indexes on expressions are not supported",
                         Peek().pos);
    }
    ASSIGN_OR_RETURN(std::string c, Name());
    if (Peek().IsOp("("))
      return Status::Sql(sqlstate::kFeatureNotSupported, "indexes on expressions are not supported",
                         Peek().pos);
    s.columns.push_back(std::move(c));
    bool desc = Accept("desc");
    if (!desc) Accept("asc");
    s.desc.push_back(desc);
    if (Accept("nulls") && !Accept("first")) RETURN_NOT_OK(Expect("last"));
  } while (AcceptOp(","));
  RETURN_NOT_OK(ExpectOp(")"));
  if (Accept("include") || Peek().Is("where")) {
    return Status::Sql(sqlstate::kFeatureNotSupported,
                       "partial indexes and INCLUDE columns are not supported", Peek().pos);
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
      return Status::Sql(sqlstate::kFeatureNotSupported,
                         fmt::format("role option {} is not supported", Peek().text), Peek().pos);
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
      return Status::Sql(sqlstate::kFeatureNotSupported, "DROP DATABASE options are not supported",
                         Peek().pos);
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
    return Status::Sql(sqlstate::kFeatureNotSupported,
                       fmt::format("DROP {} is not supported", Peek().text), Peek().pos);
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
        return Status::Sql(sqlstate::kFeatureNotSupported,
                           "ALTER TABLE ... ADD supports only PRIMARY KEY", Peek().pos);
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
    if (Peek().Is("set") || Peek().Is("reset")) {
      SetTableOptionsStmt o;
      o.table = s.table;
      o.pos = Peek().pos;
      if (Accept("reset")) {
        RETURN_NOT_OK(ExpectOp("("));
        do {
          ASSIGN_OR_RETURN(std::string name, Name());
          if (name == "replicas") o.replicas = 0;  // others mean nothing here (as in WITH)
        } while (AcceptOp(","));
        RETURN_NOT_OK(ExpectOp(")"));
        return Statement(std::move(o));
      }
      i_++;
      if (!Peek().IsOp("(")) {
        return Status::Sql(sqlstate::kFeatureNotSupported,
                           "ALTER TABLE ... SET supports only storage parameters: SET (name = "
                           "value, ...)",
                           Peek().pos);
      }
      uint32_t replicas = 0;
      RETURN_NOT_OK(ParseStorageParameterList(&replicas));
      if (replicas) o.replicas = replicas;
      return Statement(std::move(o));
    }
    if (!Peek().Is("move")) {
      return Status::Sql(sqlstate::kFeatureNotSupported,
                         "ALTER TABLE supports only ADD PRIMARY KEY, SET (replicas = n) and MOVE "
                         "SEGMENT <id> TO NODE <id>",
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
  if (Accept("system")) {
    RETURN_NOT_OK(Expect("reload"));
    RETURN_NOT_OK(Expect("energy"));
    RETURN_NOT_OK(Expect("policy"));
    return Statement(AlterSystemStmt{});
  }
  if (Accept("node")) {
    AlterNodeStmt s;
    ASSIGN_OR_RETURN(uint64_t n, UnsignedInt());
    s.node = static_cast<uint32_t>(n);
    if (Accept("drain")) {
      s.action = AlterNodeStmt::Action::kDrain;
    } else if (Accept("suspend")) {
      s.action = AlterNodeStmt::Action::kSuspend;
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
    return Statement(s);
  }
  return Status::Sql(sqlstate::kFeatureNotSupported,
                     fmt::format("ALTER {} is not supported", Peek().text), Peek().pos);
}

}  // namespace wattdb::sql::internal
