// EvalVector and Select must agree with row-by-row Eval on every row: values, NULLs and errors.
#include "query/exec/eval_vector.h"

#include <random>

#include <gtest/gtest.h>

#include "common/sqlstate.h"
#include "query/exec/eval.h"

namespace wattdb::exec {
namespace {

using plan::BinOp;
using plan::BoundExpr;
using plan::BoundExprPtr;

// Columns: 0 int32, 1 bigint, 2 double, 3 numeric, 4 text, 5 bool; about 1 in 6 values NULL.
Batch RandomBatch(std::mt19937& rng, size_t rows) {
  Batch b;
  b.Reset(6);
  for (size_t r = 0; r < rows; r++) {
    auto null = [&] { return rng() % 6 == 0; };
    int64_t i = static_cast<int64_t>(rng() % 21) - 10;
    b.cols[0].Append(null() ? Value() : Value::Int32(i));
    b.cols[1].Append(null() ? Value()
                            : Value::Int64(rng() % 4 == 0 ? INT64_MAX - (rng() % 3) : i * 3));
    b.cols[2].Append(null() ? Value() : Value::Double(static_cast<double>(i) / 4));
    b.cols[3].Append(null() ? Value() : Value::Numeric(Decimal{static_cast<__int128>(i) * 25, 2}));
    b.cols[4].Append(null() ? Value()
                            : Value::Text(std::string(1, static_cast<char>('a' + rng() % 4))));
    b.cols[5].Append(null() ? Value() : Value::Bool(rng() % 2));
    b.rows++;
  }
  return b;
}

const SqlType kTypes[] = {{TypeId::kInt32},       {TypeId::kInt64}, {TypeId::kDouble},
                          SqlType::Numeric(0, 0), {TypeId::kText},  {TypeId::kBool}};

BoundExprPtr Col(int c) { return plan::MakeColumn(c, kTypes[c]); }

constexpr auto Bin = plan::MakeBinary;

// Both ways on every row: the same error, or the same values.
void ExpectSame(const BoundExpr& e, const Batch& b, ExecContext* ctx = nullptr) {
  Vector v;
  Status vs = EvalVector(e, b, ctx, &v);
  Status first;
  std::vector<Value> rows;
  for (size_t r = 0; r < b.rows && first.ok(); r++) {
    auto x = Eval(e, b, r, ctx);
    if (!x.ok())
      first = x.status();
    else
      rows.push_back(*x);
  }
  ASSERT_EQ(vs.ok(), first.ok()) << e.ToString() << ": " << vs.ToString() << " vs "
                                 << first.ToString();
  if (!vs.ok()) {
    EXPECT_EQ(vs.sqlstate(), first.sqlstate()) << e.ToString();
    return;
  }
  ASSERT_EQ(v.size(), b.rows);
  for (size_t r = 0; r < b.rows; r++) {
    Value got = v.GetValue(r);
    ASSERT_EQ(got.is_null(), rows[r].is_null()) << e.ToString() << " row " << r;
    if (got.is_null()) continue;
    EXPECT_EQ(got.type(), rows[r].type()) << e.ToString();
    EXPECT_EQ(got.Compare(rows[r]), 0)
        << e.ToString() << " row " << r << ": " << got.ToText() << " vs " << rows[r].ToText();
  }
  if (e.type.id == TypeId::kBool) {
    std::vector<uint32_t> sel;
    auto n = Select(e, b, ctx, &sel);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    std::vector<uint32_t> want;
    for (size_t r = 0; r < b.rows; r++) {
      if (!rows[r].is_null() && rows[r].as_bool()) want.push_back(static_cast<uint32_t>(r));
    }
    EXPECT_EQ(sel, want) << e.ToString();
  }
}

// length(), lower(), upper() over text (UTF-8 and NULLs) take a column loop; same answers.
TEST(EvalVector, TextFunctionsAgreeWithEval) {
  Batch b;
  b.Reset(1);
  for (const char* t : std::initializer_list<const char*>{"", "abc", "ÄÖü straße", "MiXeD 123",
                                                          nullptr, "日本語", "x"}) {
    b.cols[0].Append(t ? Value::Text(t) : Value());
    b.rows++;
  }
  for (plan::Func f : {plan::Func::kLength, plan::Func::kLower, plan::Func::kUpper}) {
    auto e = std::make_unique<BoundExpr>();
    e->kind = BoundExpr::Kind::kFunc;
    e->func = f;
    e->type = f == plan::Func::kLength ? SqlType{TypeId::kInt32} : SqlType{TypeId::kText};
    e->children.push_back(plan::MakeColumn(0, {TypeId::kText}));
    ExpectSame(*e, b);
  }
  Vector v;
  auto len = std::make_unique<BoundExpr>();
  len->kind = BoundExpr::Kind::kFunc;
  len->func = plan::Func::kLength;
  len->type = {TypeId::kInt32};
  len->children.push_back(plan::MakeColumn(0, {TypeId::kText}));
  ASSERT_TRUE(EvalVector(*len, b, nullptr, &v).ok());
  EXPECT_EQ(v.GetValue(2).as_int(), 10);  // characters, not bytes
  EXPECT_TRUE(v.IsNull(4));
}

// A text equal to the one before it shares its bytes (a column of repeats holds one copy);
// length() counts shared bytes once, and a shorter view of the same bytes apart.
TEST(EvalVector, RepeatedTextsShareTheirBytesAndTheirLength) {
  Batch b;
  b.Reset(1);
  for (const char* t : {"straße", "straße", "straße", "x", "straße"}) {
    b.cols[0].AppendText(t);
    b.rows++;
  }
  const std::string_view* t = b.cols[0].texts();
  EXPECT_EQ(t[1].data(), t[0].data());
  EXPECT_EQ(t[2].data(), t[0].data());
  EXPECT_NE(t[3].data(), t[0].data());
  auto arena = std::make_shared<TextArena>();
  std::string_view whole = arena->Copy("日本語");
  b.cols[0].KeepArena(arena);
  b.cols[0].AppendTextView(whole);
  b.cols[0].AppendTextView(whole.substr(0, 3));  // the same bytes, shorter
  b.rows += 2;
  auto len = std::make_unique<BoundExpr>();
  len->kind = BoundExpr::Kind::kFunc;
  len->func = plan::Func::kLength;
  len->type = {TypeId::kInt32};
  len->children.push_back(plan::MakeColumn(0, {TypeId::kText}));
  Vector v;
  ASSERT_TRUE(EvalVector(*len, b, nullptr, &v).ok());
  std::vector<int64_t> got;
  for (size_t r = 0; r < b.rows; r++) got.push_back(v.GetValue(r).as_int());
  EXPECT_EQ(got, (std::vector<int64_t>{6, 6, 6, 1, 6, 3, 1}));
}

// A text column that carries its dictionary (a decoded column batch, a column image) has its
// length() counted once per distinct value and given to each row by its code; NULL rows stay
// NULL. The dictionary goes when the column changes.
TEST(EvalVector, LengthOfADictionaryColumnIsCountedPerValue) {
  Batch b;
  b.Reset(1);
  const char* vals[] = {"straße", "x", nullptr, "日本語", "x", "straße", nullptr, "x"};
  for (const char* t : vals) {
    if (t) {
      b.cols[0].AppendText(t);
    } else {
      b.cols[0].AppendNull();
    }
    b.rows++;
  }
  auto d = FindDictionary(b.cols[0], b.rows, 32);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->values.size(), 3u);
  EXPECT_EQ(d->values[d->codes[3]], "日本語");
  b.cols[0].AttachDictionary(d);
  // A dictionary whose counts differ from the rows' shows it is what length() read.
  auto marked = std::make_shared<TextDictionary>(*d);
  marked->values[marked->codes[1]] = "xyz";
  Batch m = b;
  m.cols[0].AttachDictionary(marked);
  auto len = std::make_unique<BoundExpr>();
  len->kind = BoundExpr::Kind::kFunc;
  len->func = plan::Func::kLength;
  len->type = {TypeId::kInt32};
  len->children.push_back(plan::MakeColumn(0, {TypeId::kText}));
  auto lengths = [&](const Batch& in) {
    Vector v;
    EXPECT_TRUE(EvalVector(*len, in, nullptr, &v).ok());
    std::vector<int64_t> got;
    for (size_t r = 0; r < in.rows; r++) got.push_back(v.IsNull(r) ? -1 : v.GetValue(r).as_int());
    return got;
  };
  EXPECT_EQ(lengths(b), (std::vector<int64_t>{6, 1, -1, 3, 1, 6, -1, 1}));
  EXPECT_EQ(lengths(m), (std::vector<int64_t>{6, 3, -1, 3, 3, 6, -1, 3}));
  m.cols[0].AppendText("four");  // a change drops the dictionary
  m.rows++;
  EXPECT_EQ(m.cols[0].dictionary(), nullptr);
  EXPECT_EQ(lengths(m), (std::vector<int64_t>{6, 1, -1, 3, 1, 6, -1, 1, 4}));
  // A dictionary of one value (marked, as above): every row its length, NULL rows NULL with
  // entry zero (the arrays' contract).
  for (bool with_null : {false, true}) {
    Batch one;
    one.Reset(1);
    for (int r = 0; r < 5; r++) {
      if (with_null && r == 3) {
        one.cols[0].AppendNull();
      } else {
        one.cols[0].AppendText("ab");
      }
      one.rows++;
    }
    auto od = FindDictionary(one.cols[0], one.rows, 32);
    ASSERT_NE(od, nullptr);
    ASSERT_EQ(od->values.size(), 1u);
    auto om = std::make_shared<TextDictionary>(*od);
    om->values[0] = "xyz";
    one.cols[0].AttachDictionary(om);
    Vector v;
    ASSERT_TRUE(EvalVector(*len, one, nullptr, &v).ok());
    for (size_t r = 0; r < one.rows; r++) {
      bool null = with_null && r == 3;
      EXPECT_EQ(v.IsNull(r), null) << r;
      EXPECT_EQ(v.ints()[r], null ? 0 : 3) << r;
    }
  }
}

TEST(EvalVector, Utf8CharsCountsCharactersAcrossWords) {
  EXPECT_EQ(Utf8Chars(""), 0);
  EXPECT_EQ(Utf8Chars("abcdefghijklmnopq"), 17);
  EXPECT_EQ(Utf8Chars(std::string(24, '\x80')), 0);  // words of continuation bytes alone
  EXPECT_EQ(Utf8Chars(std::string(16, '\xC3') + std::string(16, '\xA4')), 16);
  // Long texts: per-byte counters are summed before they overflow (255 blocks of 16 bytes).
  EXPECT_EQ(Utf8Chars(std::string(20000, '\x80')), 0);
  std::string mixed;
  for (int i = 0; i < 5000; i++) mixed += i % 3 ? "\xE6\x97\xA5" : "ab";
  EXPECT_EQ(Utf8Chars(mixed), 5000 + 5000 / 3 + 1);
  std::string s;
  int64_t chars = 0;
  for (int i = 0; i < 40; i++) {  // 1-, 2-, 3- and 4-byte characters at every alignment
    const char* pieces[] = {"a", "\xC3\xA4", "\xE6\x97\xA5", "\xF0\x9F\x98\x80"};
    s += pieces[i % 4];
    chars++;
    EXPECT_EQ(Utf8Chars(s), chars) << i;
    EXPECT_EQ(Utf8Chars(std::string_view(s).substr(1)), chars - 1) << i;
  }
}

TEST(EvalVector, ComparisonsAndArithmeticAgreeWithEval) {
  std::mt19937 rng(7);
  Batch b = RandomBatch(rng, 300);
  const BinOp cmps[] = {BinOp::kEq, BinOp::kNe, BinOp::kLt, BinOp::kLe, BinOp::kGt, BinOp::kGe};
  const int numeric[] = {0, 1, 2, 3};
  for (BinOp op : cmps) {
    for (int x : numeric) {
      for (int y : numeric) ExpectSame(*Bin(op, Col(x), Col(y), {TypeId::kBool}), b);
      ExpectSame(
          *Bin(op, Col(x), plan::MakeConst(Value::Int32(2), {TypeId::kInt32}), {TypeId::kBool}), b);
      ExpectSame(*Bin(op, Col(x), plan::MakeConst(Value(), {TypeId::kInt32}), {TypeId::kBool}), b);
    }
    ExpectSame(
        *Bin(op, Col(4), plan::MakeConst(Value::Text("b"), {TypeId::kText}), {TypeId::kBool}), b);
    ExpectSame(*Bin(op, Col(5), Col(5), {TypeId::kBool}), b);
  }
  const BinOp ariths[] = {BinOp::kAdd, BinOp::kSub, BinOp::kMul, BinOp::kDiv, BinOp::kMod};
  for (BinOp op : ariths) {
    ExpectSame(*Bin(op, Col(0), Col(0), {TypeId::kInt32}), b);
    ExpectSame(*Bin(op, Col(1), Col(0), {TypeId::kInt64}), b);  // overflows and divisions by zero
    ExpectSame(*Bin(op, Col(2), Col(0), {TypeId::kDouble}), b);
    ExpectSame(*Bin(op, Col(3), Col(0), SqlType::Numeric(0, 0)), b);
    ExpectSame(*Bin(op, Col(3), plan::MakeConst(Value::Int32(3), {TypeId::kInt32}),
                    SqlType::Numeric(0, 0)),
               b);
  }
}

// A parameter ($n) run with its values in the context evaluates as the constant it stands for,
// both ways; without a value it is 08P01 both ways.
TEST(EvalVector, ParametersEvaluateAsTheConstantsTheyStandFor) {
  std::mt19937 rng(11);
  Batch b = RandomBatch(rng, 200);
  std::vector<Value> params = {Value::Int32(2), Value(), Value::Text("b")};
  ExecContext ctx;
  ctx.params = &params;
  auto param = plan::MakeParam;
  auto vec = [&](const BoundExpr& e) {
    Vector v;
    Status st = EvalVector(e, b, &ctx, &v);
    if (!st.ok()) return std::vector<std::string>{"ERROR " + st.sqlstate()};  // overflows, alike
    std::vector<std::string> out;
    for (size_t r = 0; r < v.size(); r++)
      out.push_back(v.GetValue(r).is_null() ? "NULL" : v.GetValue(r).ToText());
    return out;
  };
  for (BinOp op : {BinOp::kEq, BinOp::kLt, BinOp::kAdd, BinOp::kMul}) {
    SqlType t =
        op == BinOp::kEq || op == BinOp::kLt ? SqlType{TypeId::kBool} : SqlType{TypeId::kInt64};
    for (int i : {0, 1}) {
      auto with_param = Bin(op, Col(1), param(i, {TypeId::kInt32}), t);
      ExpectSame(*with_param, b, &ctx);
      EXPECT_EQ(vec(*with_param),
                vec(*Bin(op, Col(1), plan::MakeConst(params[i], {TypeId::kInt32}), t)));
    }
  }
  auto text = Bin(BinOp::kEq, Col(4), param(2, {TypeId::kText}), {TypeId::kBool});
  ExpectSame(*text, b, &ctx);
  EXPECT_EQ(vec(*text),
            vec(*Bin(BinOp::kEq, Col(4), plan::MakeConst(Value::Text("b"), {TypeId::kText}),
                     {TypeId::kBool})));
  EXPECT_EQ(vec(*param(2, {TypeId::kText})), std::vector<std::string>(b.rows, "b"));
  auto missing = Bin(BinOp::kAdd, Col(1), param(3, {TypeId::kInt32}), {TypeId::kInt64});
  Vector v;
  EXPECT_EQ(EvalVector(*missing, b, &ctx, &v).sqlstate(), sqlstate::kProtocolViolation);
  ExpectSame(*missing, b, &ctx);
  ExpectSame(*text, b, nullptr);  // no values at all
}

// AND/OR short-circuit row by row: 1/x = 0 is not evaluated where x = 0 is decided false.
TEST(EvalVector, AndOrNotShortCircuitPerRow) {
  std::mt19937 rng(11);
  Batch b = RandomBatch(rng, 300);
  auto zero = [] { return plan::MakeConst(Value::Int32(0), {TypeId::kInt32}); };
  auto guarded = [&](BinOp op) {
    auto ne = Bin(op == BinOp::kAnd ? BinOp::kNe : BinOp::kEq, Col(0), zero(), {TypeId::kBool});
    auto div = Bin(BinOp::kGt,
                   Bin(BinOp::kDiv, plan::MakeConst(Value::Int32(10), {TypeId::kInt32}), Col(0),
                       {TypeId::kInt32}),
                   zero(), {TypeId::kBool});
    return Bin(op, std::move(ne), std::move(div), {TypeId::kBool});
  };
  ExpectSame(*guarded(BinOp::kAnd), b);
  ExpectSame(*guarded(BinOp::kOr), b);
  auto nested = Bin(
      BinOp::kOr,
      Bin(BinOp::kAnd, Col(5), Bin(BinOp::kLt, Col(1), Col(2), {TypeId::kBool}), {TypeId::kBool}),
      Bin(BinOp::kGe, Col(3), Col(0), {TypeId::kBool}), {TypeId::kBool});
  ExpectSame(*nested, b);
  auto no = std::make_unique<BoundExpr>();
  no->kind = BoundExpr::Kind::kNot;
  no->type = {TypeId::kBool};
  no->children.push_back(std::move(nested));
  ExpectSame(*no, b);
  for (bool neg : {false, true}) {
    auto isnull = std::make_unique<BoundExpr>();
    isnull->kind = BoundExpr::Kind::kIsNull;
    isnull->negated = neg;
    isnull->type = {TypeId::kBool};
    isnull->children.push_back(Col(4));
    ExpectSame(*isnull, b);
  }
}

}  // namespace
}  // namespace wattdb::exec
