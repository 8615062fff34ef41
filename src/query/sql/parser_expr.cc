// Expression parsing: precedence climbing, loosest first: OR, AND, NOT, IS/comparison,
// BETWEEN/IN/LIKE, ||, + -, * / %, unary -, ::.
#include <charconv>

#include "common/sqlstate.h"
#include "common/stack_guard.h"
#include "query/sql/parser_internal.h"

namespace wattdb::sql::internal {

ExprPtr Parser::MakeBinary(std::string op, ExprPtr l, ExprPtr r, int pos) {
  auto e = std::make_unique<Expr>(Expr::Kind::kBinary, pos);
  e->op = std::move(op);
  e->args.push_back(std::move(l));
  e->args.push_back(std::move(r));
  return e;
}

Result<ExprPtr> Parser::ParseOr() {
  CHECK_STACK_DEPTH();
  ASSIGN_OR_RETURN(ExprPtr l, ParseAnd());
  while (Peek().Is("or")) {
    int p = Next().pos;
    ASSIGN_OR_RETURN(ExprPtr r, ParseAnd());
    l = MakeBinary("or", std::move(l), std::move(r), p);
  }
  // Every expression passes here: bound the depth of its tree, which the loops above and
  // below build without recursion (later passes over the tree recurse).
  if (MeasureDepth(*l) > kMaxExprDepth) {
    return Status::Sql(
        sqlstate::kStatementTooComplex,
        fmt::format("statement too complex: an expression nests {} levels deep (at most {})",
                    l->depth, kMaxExprDepth));
  }
  return l;
}

Result<ExprPtr> Parser::ParseAnd() {
  ASSIGN_OR_RETURN(ExprPtr l, ParseNot());
  while (Peek().Is("and")) {
    int p = Next().pos;
    ASSIGN_OR_RETURN(ExprPtr r, ParseNot());
    l = MakeBinary("and", std::move(l), std::move(r), p);
  }
  return l;
}

Result<ExprPtr> Parser::ParseNot() {
  CHECK_STACK_DEPTH();
  if (Peek().Is("not")) {
    int p = Next().pos;
    ASSIGN_OR_RETURN(ExprPtr a, ParseNot());
    auto e = std::make_unique<Expr>(Expr::Kind::kUnary, p);
    e->op = "not";
    e->args.push_back(std::move(a));
    return e;
  }
  return ParseComparison();
}

Result<ExprPtr> Parser::ParseComparison() {
  ASSIGN_OR_RETURN(ExprPtr l, ParsePredicate());
  while (true) {
    const Token& t = Peek();
    std::string op;
    int op_pos = t.pos;
    if (t.kind == Tok::kOp && (t.text == "=" || t.text == "<>" || t.text == "!=" || t.text == "<" ||
                               t.text == "<=" || t.text == ">" || t.text == ">=" || t.text == "~" ||
                               t.text == "!~" || t.text == "~*" || t.text == "!~*")) {
      i_++;
      op = t.text == "!=" ? "<>" : t.text;
    } else if (t.Is("operator") && Peek(1).IsOp("(")) {  // OPERATOR(pg_catalog.~)
      i_ += 2;
      if (Peek().Is("pg_catalog") && Peek(1).IsOp(".")) i_ += 2;
      if (Peek().kind != Tok::kOp || Peek().IsOp("(") || Peek().IsOp(")")) return SyntaxError();
      op = Next().text;
      RETURN_NOT_OK(ExpectOp(")"));
    }
    if (!op.empty()) {
      if ((Peek().Is("any") || Peek().Is("some") || Peek().Is("all")) && Peek(1).IsOp("(") &&
          !IsSelectAhead(1)) {
        // x op ANY (array): true if the comparison holds for some (ALL: every) element.
        bool all = Next().Is("all");
        i_++;
        auto e = std::make_unique<Expr>(Expr::Kind::kFunc, op_pos);
        e->name = all ? "__all" : "__any";
        e->op = op;
        e->args.push_back(std::move(l));
        ASSIGN_OR_RETURN(ExprPtr arr, ParseExpr());
        e->args.push_back(std::move(arr));
        RETURN_NOT_OK(ExpectOp(")"));
        l = std::move(e);
        continue;
      }
      if (op == "=" && (Peek().Is("any") || Peek().Is("some")) && Peek(1).IsOp("(")) {
        i_++;  // x = ANY (SELECT ...) is x IN (SELECT ...)
        auto e = std::make_unique<Expr>(Expr::Kind::kInSelect, op_pos);
        i_++;
        e->args.push_back(std::move(l));
        e->subquery = std::make_shared<SelectStmt>();
        ASSIGN_OR_RETURN(*e->subquery, ParseSelect());
        RETURN_NOT_OK(ExpectOp(")"));
        l = std::move(e);
        continue;
      }
      ASSIGN_OR_RETURN(ExprPtr r, ParsePredicate());
      l = MakeBinary(op, std::move(l), std::move(r), op_pos);
      continue;
    }
    if (t.Is("is")) {
      i_++;
      bool neg = Accept("not");
      auto e = std::make_unique<Expr>(Expr::Kind::kIsNull, t.pos);
      e->negated = neg;
      if (Accept("null")) {
        e->args.push_back(std::move(l));
        l = std::move(e);
        continue;
      }
      if (Peek().Is("true") || Peek().Is("false")) {
        // x IS [NOT] TRUE/FALSE  ==  coalesce(x = v, false) [negated]
        bool v = Next().Is("true");
        auto eq = std::make_unique<Expr>(Expr::Kind::kFunc, t.pos);
        eq->name = v ? "__is_true" : "__is_false";
        eq->args.push_back(std::move(l));
        if (neg) {
          auto n = std::make_unique<Expr>(Expr::Kind::kUnary, t.pos);
          n->op = "not";
          n->args.push_back(std::move(eq));
          l = std::move(n);
        } else {
          l = std::move(eq);
        }
        continue;
      }
      return SyntaxError();
    }
    break;
  }
  return l;
}

Result<ExprPtr> Parser::ParsePredicate() {
  ASSIGN_OR_RETURN(ExprPtr l, ParseConcat());
  while (true) {
    int save = static_cast<int>(i_);
    bool neg = Accept("not");
    const Token& t = Peek();
    if (t.Is("between")) {
      i_++;
      auto e = std::make_unique<Expr>(Expr::Kind::kBetween, t.pos);
      e->negated = neg;
      e->args.push_back(std::move(l));
      ASSIGN_OR_RETURN(ExprPtr lo, ParseConcat());
      RETURN_NOT_OK(Expect("and"));
      ASSIGN_OR_RETURN(ExprPtr hi, ParseConcat());
      e->args.push_back(std::move(lo));
      e->args.push_back(std::move(hi));
      l = std::move(e);
      continue;
    }
    if (t.Is("in")) {
      i_++;
      auto e = std::make_unique<Expr>(Expr::Kind::kInList, t.pos);
      e->negated = neg;
      e->args.push_back(std::move(l));
      RETURN_NOT_OK(ExpectOp("("));
      if (Peek().Is("select") || IsSelectAhead()) {
        e->kind = Expr::Kind::kInSelect;
        e->subquery = std::make_shared<SelectStmt>();
        ASSIGN_OR_RETURN(*e->subquery, ParseSelect());
        RETURN_NOT_OK(ExpectOp(")"));
        l = std::move(e);
        continue;
      }
      do {
        ASSIGN_OR_RETURN(ExprPtr x, ParseExpr());
        e->args.push_back(std::move(x));
      } while (AcceptOp(","));
      RETURN_NOT_OK(ExpectOp(")"));
      l = std::move(e);
      continue;
    }
    if (t.Is("like") || t.Is("ilike")) {
      i_++;
      auto e = std::make_unique<Expr>(Expr::Kind::kLike, t.pos);
      e->negated = neg;
      e->op = t.text;
      e->args.push_back(std::move(l));
      ASSIGN_OR_RETURN(ExprPtr p, ParseConcat());
      e->args.push_back(std::move(p));
      l = std::move(e);
      continue;
    }
    i_ = save;
    break;
  }
  return l;
}

Result<ExprPtr> Parser::ParseConcat() {
  ASSIGN_OR_RETURN(ExprPtr l, ParseAdd());
  while (Peek().IsOp("||")) {
    int p = Next().pos;
    ASSIGN_OR_RETURN(ExprPtr r, ParseAdd());
    l = MakeBinary("||", std::move(l), std::move(r), p);
  }
  return l;
}

Result<ExprPtr> Parser::ParseAdd() {
  ASSIGN_OR_RETURN(ExprPtr l, ParseMul());
  while (Peek().IsOp("+") || Peek().IsOp("-")) {
    const Token& t = Next();
    ASSIGN_OR_RETURN(ExprPtr r, ParseMul());
    l = MakeBinary(t.text, std::move(l), std::move(r), t.pos);
  }
  return l;
}

Result<ExprPtr> Parser::ParseMul() {
  ASSIGN_OR_RETURN(ExprPtr l, ParseUnary());
  while (Peek().IsOp("*") || Peek().IsOp("/") || Peek().IsOp("%")) {
    const Token& t = Next();
    ASSIGN_OR_RETURN(ExprPtr r, ParseUnary());
    l = MakeBinary(t.text, std::move(l), std::move(r), t.pos);
  }
  return l;
}

namespace {

// A numeric constant; one beyond NUMERIC's 38 digits becomes a double precision.
Value NumericLiteral(const std::string& text) {
  auto d = ParseDecimal(text);
  if (d.ok()) return Value::Numeric(*d);
  double x = 0;
  std::from_chars(text.data(), text.data() + text.size(), x);
  return Value::Double(x);
}

}  // namespace

Result<ExprPtr> Parser::ParseUnary() {
  CHECK_STACK_DEPTH();
  if (Peek().IsOp("-") || Peek().IsOp("+")) {
    const Token& t = Next();
    ASSIGN_OR_RETURN(ExprPtr a, ParseUnary());
    if (t.text == "+" && a->kind == Expr::Kind::kLiteral && SqlType{a->value.type()}.IsNumeric())
      return a;
    // Fold -literal so that -9223372036854775808 parses.
    if (a->kind == Expr::Kind::kLiteral && a->value.type() == TypeId::kDouble) {
      a->value = Value::Double(-a->value.as_double());
      a->pos = t.pos;
      return a;
    }
    if (a->kind == Expr::Kind::kLiteral && a->value.type() == TypeId::kNumeric) {
      a->value = Value::Numeric(Decimal{-a->value.as_decimal().v, a->value.as_decimal().scale});
      a->pos = t.pos;
      return a;
    }
    auto e = std::make_unique<Expr>(Expr::Kind::kUnary, t.pos);
    e->op = t.text;  // "-" or "+"
    e->args.push_back(std::move(a));
    return e;
  }
  return ParseCastSuffix();
}

Result<ExprPtr> Parser::ParseCastSuffix() {
  ASSIGN_OR_RETURN(ExprPtr e, ParsePrimary());
  while (true) {
    if (Peek().IsOp("::")) {
      int p = Next().pos;
      int k = Peek().Is("pg_catalog") && Peek(1).IsOp(".") ? 2 : 0;
      const Token& ty = Peek(k);
      if (ty.Is("regclass") || ty.Is("regtype") || ty.Is("regnamespace") || ty.Is("regproc") ||
          ty.Is("regrole")) {
        // Object identifier types print names: evaluated from the catalog.
        i_ += k + 1;
        auto f = std::make_unique<Expr>(Expr::Kind::kFunc, p);
        f->name = ty.text;
        f->args.push_back(std::move(e));
        e = std::move(f);
        continue;
      }
      auto c = std::make_unique<Expr>(Expr::Kind::kCast, p);
      ASSIGN_OR_RETURN(c->cast_type, ParseType());
      c->args.push_back(std::move(e));
      e = std::move(c);
    } else if (Peek().IsOp("[")) {  // array subscript
      int p = Next().pos;
      auto f = std::make_unique<Expr>(Expr::Kind::kFunc, p);
      f->name = "__subscript";
      f->args.push_back(std::move(e));
      ASSIGN_OR_RETURN(ExprPtr idx, ParseExpr());
      f->args.push_back(std::move(idx));
      RETURN_NOT_OK(ExpectOp("]"));
      e = std::move(f);
    } else if (Peek().Is("collate")) {  // collations: accepted; text compares bytewise
      i_++;
      if (Peek(1).IsOp(".")) i_ += 2;
      if (Peek().kind != Tok::kIdent && Peek().kind != Tok::kQuotedIdent) return SyntaxError();
      i_++;
    } else {
      return e;
    }
  }
}

Result<ExprPtr> Parser::ParsePrimary() {
  CHECK_STACK_DEPTH();
  const Token& t = Peek();
  switch (t.kind) {
    case Tok::kInteger:
    case Tok::kFloat:
    case Tok::kString:
    case Tok::kParam:
      return ParseLiteral();
    case Tok::kOp:
      if (t.text == "(") return ParseParenthesized();
      return SyntaxError();
    case Tok::kEnd:
      return SyntaxError();
    case Tok::kIdent:
      return ParseKeywordOrName();
    case Tok::kQuotedIdent:
      return ParseNameOrCall();
  }
  return SyntaxError();
}

Result<ExprPtr> Parser::ParseLiteral() {
  const Token& t = Next();
  if (t.kind == Tok::kParam) {
    auto e = std::make_unique<Expr>(Expr::Kind::kParam, t.pos);
    auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), e->param);
    if (ec != std::errc() || e->param < 1 || e->param > 65535) {
      return Status::Sql(sqlstate::kUndefinedParameter,
                         fmt::format("there is no parameter ${}", t.text), t.pos);
    }
    return e;
  }
  auto e = std::make_unique<Expr>(Expr::Kind::kLiteral, t.pos);
  if (t.kind == Tok::kString) {
    e->value = Value::Text(t.text);
    e->untyped = true;
  } else if (t.kind == Tok::kFloat) {  // 1.5, 1e3: numeric, as in PostgreSQL
    e->value = NumericLiteral(t.text);
  } else {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (ec != std::errc()) {
      e->value = NumericLiteral(t.text);  // too large for bigint: numeric, as in PostgreSQL
    } else if (v <= INT32_MAX) {
      e->value = Value::Int32(v);
    } else {
      e->value = Value::Int64(v);
    }
  }
  return e;
}

Result<ExprPtr> Parser::ParseParenthesized() {
  const Token& t = Peek();
  if (IsSelectAhead()) {
    // (SELECT ...) as a value; also ((SELECT ...) UNION ...) via ParseSelect.
    auto e = std::make_unique<Expr>(Expr::Kind::kSubquery, t.pos);
    i_++;
    e->subquery = std::make_shared<SelectStmt>();
    ASSIGN_OR_RETURN(*e->subquery, ParseSelect());
    RETURN_NOT_OK(ExpectOp(")"));
    return e;
  }
  i_++;
  ASSIGN_OR_RETURN(ExprPtr e, ParseExpr());
  RETURN_NOT_OK(ExpectOp(")"));
  return e;
}

Result<ExprPtr> Parser::ParseSubqueryAfterParen(Expr::Kind kind, int pos) {
  auto e = std::make_unique<Expr>(kind, pos);
  e->subquery = std::make_shared<SelectStmt>();
  ASSIGN_OR_RETURN(*e->subquery, ParseSelect());
  RETURN_NOT_OK(ExpectOp(")"));
  return e;
}

Result<ExprPtr> Parser::ParseKeywordOrName() {
  const Token& t = Peek();
  if (t.Is("null")) {
    i_++;
    return std::make_unique<Expr>(Expr::Kind::kLiteral, t.pos);
  }
  if (t.Is("true") || t.Is("false")) {
    i_++;
    auto e = std::make_unique<Expr>(Expr::Kind::kLiteral, t.pos);
    e->value = Value::Bool(t.Is("true"));
    return e;
  }
  if (t.Is("case")) return ParseCase();
  if (t.Is("current_timestamp") || t.Is("localtimestamp")) {
    i_++;
    if (AcceptOp("(")) {  // precision: accepted
      RETURN_NOT_OK(UnsignedInt().status());
      RETURN_NOT_OK(ExpectOp(")"));
    }
    auto f = std::make_unique<Expr>(Expr::Kind::kFunc, t.pos);
    f->name = t.text;
    return f;
  }
  if (t.Is("array") && Peek(1).IsOp("[")) {  // ARRAY[a, b, ...]
    i_ += 2;
    auto f = std::make_unique<Expr>(Expr::Kind::kFunc, t.pos);
    f->name = "__array";
    if (!Peek().IsOp("]")) {
      do {
        ASSIGN_OR_RETURN(ExprPtr a, ParseExpr());
        f->args.push_back(std::move(a));
      } while (AcceptOp(","));
    }
    RETURN_NOT_OK(ExpectOp("]"));
    return f;
  }
  if (t.Is("array") && Peek(1).IsOp("(") && IsSelectAhead(1)) {
    i_ += 2;
    return ParseSubqueryAfterParen(Expr::Kind::kArray, t.pos);
  }
  if (t.Is("exists") && Peek(1).IsOp("(")) {
    i_ += 2;
    return ParseSubqueryAfterParen(Expr::Kind::kExists, t.pos);
  }
  if (t.Is("cast")) {
    i_++;
    RETURN_NOT_OK(ExpectOp("("));
    auto c = std::make_unique<Expr>(Expr::Kind::kCast, t.pos);
    ASSIGN_OR_RETURN(ExprPtr a, ParseExpr());
    RETURN_NOT_OK(Expect("as"));
    ASSIGN_OR_RETURN(c->cast_type, ParseType());
    RETURN_NOT_OK(ExpectOp(")"));
    c->args.push_back(std::move(a));
    return c;
  }
  // LEFT and RIGHT are join keywords, and also functions.
  if (kReserved.count(t.text) && !((t.Is("left") || t.Is("right")) && Peek(1).IsOp("(")))
    return SyntaxError();
  return ParseNameOrCall();
}

Result<ExprPtr> Parser::ParseNameOrCall() {
  const Token& t = Next();
  std::string name = t.text;
  if (t.Is("pg_catalog") && Peek().IsOp(".") && Peek(2).IsOp("(")) {  // pg_catalog.f(...)
    i_++;
    name = Next().text;
  }
  if (Peek().IsOp("(")) {  // function call
    i_++;
    auto f = std::make_unique<Expr>(Expr::Kind::kFunc, t.pos);
    f->name = name;
    if (AcceptOp("*")) {
      f->star_arg = true;
    } else if (!Peek().IsOp(")")) {
      if (Accept("distinct")) {
        f->distinct = true;
      } else {
        Accept("all");
      }
      do {
        ASSIGN_OR_RETURN(ExprPtr a, ParseExpr());
        f->args.push_back(std::move(a));
      } while (AcceptOp(","));
    }
    RETURN_NOT_OK(ExpectOp(")"));
    return f;
  }
  auto c = std::make_unique<Expr>(Expr::Kind::kColumn, t.pos);
  if (AcceptOp(".")) {
    if (Peek().kind != Tok::kIdent && Peek().kind != Tok::kQuotedIdent) return SyntaxError();
    c->table = name;
    c->name = Next().text;
  } else {
    c->name = name;
  }
  return c;
}

Result<ExprPtr> Parser::ParseCase() {
  auto e = std::make_unique<Expr>(Expr::Kind::kCase, Next().pos);
  if (!Peek().Is("when")) {
    ASSIGN_OR_RETURN(e->operand, ParseExpr());
  }
  if (!Peek().Is("when")) return SyntaxError();
  while (Accept("when")) {
    ASSIGN_OR_RETURN(ExprPtr w, ParseExpr());
    RETURN_NOT_OK(Expect("then"));
    ASSIGN_OR_RETURN(ExprPtr th, ParseExpr());
    e->args.push_back(std::move(w));
    e->args.push_back(std::move(th));
  }
  if (Accept("else")) {
    ASSIGN_OR_RETURN(e->else_expr, ParseExpr());
  }
  RETURN_NOT_OK(Expect("end"));
  return e;
}

}  // namespace wattdb::sql::internal
