// Query parsing: SELECT cores, set operations, ORDER BY / LIMIT, FROM items and joins.
#include "common/sqlstate.h"
#include "common/stack_guard.h"
#include "query/sql/parser_internal.h"

namespace wattdb::sql::internal {

bool Parser::IsSelectAhead(int from) const {
  int k = from;
  while (Peek(k).IsOp("(")) k++;
  return k > from && Peek(k).Is("select");
}

Result<SelectStmt> Parser::ParseSelect() {
  CHECK_STACK_DEPTH();
  ASSIGN_OR_RETURN(SelectStmt s, ParseSetOperand(0));
  if (Peek().Is("order") || Peek().Is("limit") || Peek().Is("offset") || Peek().Is("for") ||
      Peek().Is("fetch")) {
    if (s.set_op == SetOp::kNone && (!s.order_by.empty() || s.limit || s.offset)) {
      // (SELECT ... LIMIT n) LIMIT m: the outer clauses apply to the inner result.
      SelectStmt outer;
      auto star = std::make_unique<Expr>(Expr::Kind::kStar, Peek().pos);
      outer.items.push_back({std::move(star), ""});
      TableRef ref;
      ref.kind = TableRef::Kind::kSubquery;
      ref.alias = "subquery";
      ref.subquery = std::make_shared<SelectStmt>(std::move(s));
      outer.from.push_back(std::move(ref));
      s = std::move(outer);
    }
    RETURN_NOT_OK(ParseOrderLimit(&s));
  }
  return s;
}

// level 0: UNION / EXCEPT operands; level 1: INTERSECT operands.
Result<SelectStmt> Parser::ParseSetOperand(int level) {
  CHECK_STACK_DEPTH();
  SelectStmt l;
  if (level == 0) {
    ASSIGN_OR_RETURN(l, ParseSetOperand(1));
  } else if (Peek().IsOp("(")) {
    i_++;
    ASSIGN_OR_RETURN(l, ParseSelect());
    RETURN_NOT_OK(ExpectOp(")"));
  } else {
    ASSIGN_OR_RETURN(l, ParseSelectCore());
  }
  if (level == 1) {
    while (Peek().Is("intersect")) {
      i_++;
      SelectStmt node;
      node.set_op = SetOp::kIntersect;
      node.set_all = Accept("all");
      if (!node.set_all) Accept("distinct");
      node.left = std::make_unique<SelectStmt>(std::move(l));
      node.right = std::make_unique<SelectStmt>();
      ASSIGN_OR_RETURN(*node.right, ParseSetOperand(2));
      l = std::move(node);
    }
    return l;
  }
  if (level == 2) return l;
  while (Peek().Is("union") || Peek().Is("except")) {
    SelectStmt node;
    node.set_op = Next().Is("union") ? SetOp::kUnion : SetOp::kExcept;
    node.set_all = Accept("all");
    if (!node.set_all) Accept("distinct");
    node.left = std::make_unique<SelectStmt>(std::move(l));
    node.right = std::make_unique<SelectStmt>();
    ASSIGN_OR_RETURN(*node.right, ParseSetOperand(1));
    l = std::move(node);
  }
  return l;
}

Result<SelectStmt> Parser::ParseSelectCore() {
  RETURN_NOT_OK(Expect("select"));
  SelectStmt s;
  if (Accept("distinct")) {
    if (Peek().Is("on"))
      return Status::Sql(sqlstate::kFeatureNotSupported, "SELECT DISTINCT ON is not supported",
                         Peek().pos);
    s.distinct = true;
  } else {
    Accept("all");
  }
  do {
    SelectItem item;
    if (Peek().IsOp("*")) {
      item.expr = std::make_unique<Expr>(Expr::Kind::kStar, Next().pos);
    } else if ((Peek().kind == Tok::kIdent || Peek().kind == Tok::kQuotedIdent) &&
               Peek(1).IsOp(".") && Peek(2).IsOp("*")) {
      item.expr = std::make_unique<Expr>(Expr::Kind::kStar, Peek().pos);
      item.expr->table = Next().text;
      i_ += 2;
    } else {
      ASSIGN_OR_RETURN(item.expr, ParseExpr());
      if (Accept("as")) {
        if (Peek().kind != Tok::kIdent && Peek().kind != Tok::kQuotedIdent) return SyntaxError();
        item.alias = Next().text;
      } else if (Peek().kind == Tok::kQuotedIdent ||
                 (Peek().kind == Tok::kIdent && !kReserved.count(Peek().text))) {
        item.alias = Next().text;
      }
    }
    s.items.push_back(std::move(item));
  } while (AcceptOp(","));
  if (Accept("from")) {
    do {
      ASSIGN_OR_RETURN(TableRef ref, ParseFromItem());
      s.from.push_back(std::move(ref));
    } while (AcceptOp(","));
  }
  if (Accept("where")) {
    ASSIGN_OR_RETURN(s.where, ParseExpr());
  }
  if (Accept("group")) {
    RETURN_NOT_OK(Expect("by"));
    do {
      ASSIGN_OR_RETURN(ExprPtr e, ParseExpr());
      s.group_by.push_back(std::move(e));
    } while (AcceptOp(","));
  }
  if (Accept("having")) {
    ASSIGN_OR_RETURN(s.having, ParseExpr());
  }
  if (Peek().Is("window"))
    return Status::Sql(sqlstate::kFeatureNotSupported, "WINDOW is not supported", Peek().pos);
  return s;
}

Status Parser::ParseOrderLimit(SelectStmt* s) {
  if (Accept("order")) {
    RETURN_NOT_OK(Expect("by"));
    do {
      OrderItem o;
      ASSIGN_OR_RETURN(o.expr, ParseExpr());
      if (Accept("desc")) {
        o.desc = true;
      } else {
        Accept("asc");
      }
      if (Accept("nulls")) {
        if (Accept("first")) {
          o.nulls_first = true;
        } else {
          RETURN_NOT_OK(Expect("last"));
          o.nulls_first = false;
        }
      }
      s->order_by.push_back(std::move(o));
    } while (AcceptOp(","));
  }
  for (int k = 0; k < 2; k++) {
    if (Accept("limit")) {
      if (Accept("all")) continue;
      ASSIGN_OR_RETURN(s->limit, ParseExpr());
    } else if (Accept("offset")) {
      ASSIGN_OR_RETURN(s->offset, ParseExpr());
      Accept("rows") || Accept("row");
    }
  }
  if (Peek().Is("fetch"))
    return Status::Sql(sqlstate::kFeatureNotSupported, "FETCH FIRST is not supported; use LIMIT",
                       Peek().pos);
  if (Accept("for")) {
    if (!(Accept("update") || Accept("share"))) {
      if (Accept("no")) {
        RETURN_NOT_OK(Expect("key"));
        RETURN_NOT_OK(Expect("update"));
      } else {
        RETURN_NOT_OK(Expect("key"));
        RETURN_NOT_OK(Expect("share"));
      }
    }
    if (Peek().Is("of"))
      return Status::Sql(sqlstate::kFeatureNotSupported, "FOR UPDATE OF is not supported",
                         Peek().pos);
    if (Peek().Is("nowait") || Peek().Is("skip")) {
      return Status::Sql(sqlstate::kFeatureNotSupported,
                         fmt::format("FOR UPDATE {} is not supported", Peek().text), Peek().pos);
    }
    s->for_update = true;
  }
  return Status::OK();
}

Result<TableRef> Parser::ParseTablePrimary() {
  TableRef ref;
  ref.pos = Peek().pos;
  if (Peek().IsOp("(")) {
    if (!IsSelectAhead()) {
      // A parenthesized join: (a JOIN b ON ...)
      i_++;
      ASSIGN_OR_RETURN(ref, ParseFromItem());
      RETURN_NOT_OK(ExpectOp(")"));
      return ref;
    }
    i_++;
    ref.kind = TableRef::Kind::kSubquery;
    ref.subquery = std::make_shared<SelectStmt>();
    ASSIGN_OR_RETURN(*ref.subquery, ParseSelect());
    RETURN_NOT_OK(ExpectOp(")"));
  } else {
    if (Peek().Is("lateral"))
      return Status::Sql(sqlstate::kFeatureNotSupported, "LATERAL is not supported", Peek().pos);
    ASSIGN_OR_RETURN(ref.name, QualifiedName());
    if (AcceptOp("(")) {  // a function in FROM: generate_series(...)
      ref.kind = TableRef::Kind::kFunction;
      if (!Peek().IsOp(")")) {
        do {
          ASSIGN_OR_RETURN(ExprPtr a, ParseExpr());
          ref.args.push_back(std::move(a));
        } while (AcceptOp(","));
      }
      RETURN_NOT_OK(ExpectOp(")"));
    }
  }
  if (Accept("as")) {
    ASSIGN_OR_RETURN(ref.alias, Name());
  } else if (Peek().kind == Tok::kQuotedIdent ||
             (Peek().kind == Tok::kIdent && !kReserved.count(Peek().text) &&
              !Peek().Is("natural"))) {
    ref.alias = Next().text;
  }
  if (Peek().IsOp("("))
    return Status::Sql(sqlstate::kFeatureNotSupported, "column alias lists are not supported",
                       Peek().pos);
  if (ref.kind == TableRef::Kind::kSubquery && ref.alias.empty()) {
    return Status::Sql(sqlstate::kSyntaxError, "subquery in FROM must have an alias", ref.pos);
  }
  return ref;
}

Result<TableRef> Parser::ParseFromItem() {
  ASSIGN_OR_RETURN(TableRef l, ParseTablePrimary());
  while (true) {
    int pos = Peek().pos;
    JoinType jt;
    if (Accept("cross")) {
      RETURN_NOT_OK(Expect("join"));
      jt = JoinType::kCross;
    } else if (Accept("join")) {
      jt = JoinType::kInner;
    } else if (Accept("inner")) {
      RETURN_NOT_OK(Expect("join"));
      jt = JoinType::kInner;
    } else if (Peek().Is("left") || Peek().Is("right") || Peek().Is("full")) {
      const Token& t = Next();
      jt = t.Is("left") ? JoinType::kLeft : t.Is("right") ? JoinType::kRight : JoinType::kFull;
      Accept("outer");
      RETURN_NOT_OK(Expect("join"));
    } else if (Peek().Is("natural")) {
      return Status::Sql(sqlstate::kFeatureNotSupported, "NATURAL JOIN is not supported", pos);
    } else {
      return l;
    }
    if (++joins_ > kMaxJoins) {
      return Status::Sql(sqlstate::kStatementTooComplex,
                         fmt::format("statement too complex: more than {} joins", kMaxJoins), pos);
    }
    TableRef j;
    j.kind = TableRef::Kind::kJoin;
    j.pos = pos;
    j.join = jt;
    j.left = std::make_unique<TableRef>(std::move(l));
    j.right = std::make_unique<TableRef>();
    ASSIGN_OR_RETURN(*j.right, ParseTablePrimary());
    if (jt != JoinType::kCross) {
      if (Accept("on")) {
        ASSIGN_OR_RETURN(j.on, ParseExpr());
      } else if (Accept("using")) {
        RETURN_NOT_OK(ExpectOp("("));
        do {
          ASSIGN_OR_RETURN(std::string c, Name());
          j.using_columns.push_back(c);
        } while (AcceptOp(","));
        RETURN_NOT_OK(ExpectOp(")"));
      } else {
        return SyntaxError();
      }
    }
    l = std::move(j);
  }
}

}  // namespace wattdb::sql::internal

namespace wattdb::sql {

namespace {

void ExprRelations(const Expr& e, std::vector<std::string>* out);

void RefRelations(const TableRef& r, std::vector<std::string>* out) {
  if (r.kind == TableRef::Kind::kTable) out->push_back(r.name);
  if (r.subquery) ReferencedRelations(*r.subquery, out);
  if (r.left) RefRelations(*r.left, out);
  if (r.right) RefRelations(*r.right, out);
  if (r.on) ExprRelations(*r.on, out);
}

void ExprRelations(const Expr& e, std::vector<std::string>* out) {
  if (e.subquery) ReferencedRelations(*e.subquery, out);
  for (const auto& a : e.args) {
    if (a) ExprRelations(*a, out);
  }
  if (e.operand) ExprRelations(*e.operand, out);
  if (e.else_expr) ExprRelations(*e.else_expr, out);
}

}  // namespace

void ReferencedRelations(const SelectStmt& s, std::vector<std::string>* out) {
  if (s.left) ReferencedRelations(*s.left, out);
  if (s.right) ReferencedRelations(*s.right, out);
  for (const auto& r : s.from) RefRelations(r, out);
  for (const auto& it : s.items) ExprRelations(*it.expr, out);
  for (const ExprPtr* e : {&s.where, &s.having}) {
    if (*e) ExprRelations(**e, out);
  }
  for (const auto& g : s.group_by) ExprRelations(*g, out);
}

}  // namespace wattdb::sql
