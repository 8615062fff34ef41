#include "query/exec/vector.h"

#include <random>

#include <gtest/gtest.h>

#include "common/codec.h"
#include "query/exec/batch.h"
#include "query/exec/batch_codec.h"
#include "query/exec/row_decode.h"

namespace wattdb::exec {
namespace {

TEST(Vector, KeepsEachPhysicalTypeAndRoundTripsValues) {
  std::vector<Value> vals = {Value(), Value::Int32(7), Value::Int32(-3), Value()};
  Vector v;
  for (const auto& x : vals) v.Append(x);
  EXPECT_EQ(v.phys(), PhysType::kInt);
  EXPECT_EQ(v.value_type(), TypeId::kInt32);
  ASSERT_EQ(v.size(), 4u);
  EXPECT_TRUE(v.IsNull(0));
  EXPECT_EQ(v.ints()[1], 7);
  for (size_t i = 0; i < vals.size(); i++) {
    EXPECT_EQ(v.GetValue(i).type(), vals[i].type());
    if (!vals[i].is_null()) {
      EXPECT_EQ(v.GetValue(i).as_int(), vals[i].as_int());
    }
  }
  Vector t;
  t.Append(Value::Text("abc"));
  t.AppendNull();
  t.AppendText("");
  EXPECT_EQ(t.phys(), PhysType::kText);
  EXPECT_EQ(t.GetValue(0).as_text(), "abc");
  EXPECT_TRUE(t.GetValue(1).is_null());
  EXPECT_EQ(t.GetValue(2).as_text(), "");
  Vector d;
  d.Append(Value::Numeric(ParseDecimal("1.25").value()));
  EXPECT_EQ(d.phys(), PhysType::kDecimal);
  EXPECT_EQ(FormatDecimal(d.GetValue(0).as_decimal()), "1.25");
  Vector b;
  b.Append(Value::Bool(true));
  EXPECT_EQ(b.GetValue(0).type(), TypeId::kBool);
  EXPECT_TRUE(b.GetValue(0).as_bool());
}

// Values of different types in one column (a UNION of an int and a bigint, say) box the
// vector; nothing is converted.
TEST(Vector, MixedTypesBoxTheColumnWithoutChangingValues) {
  Vector v;
  v.Append(Value::Int64(1));
  v.AppendNull();
  v.Append(Value::Double(2.5));
  v.Append(Value::Text("x"));
  EXPECT_EQ(v.phys(), PhysType::kBoxed);
  EXPECT_EQ(v.GetValue(0).type(), TypeId::kInt64);
  EXPECT_TRUE(v.GetValue(1).is_null());
  EXPECT_EQ(v.GetValue(2).as_double(), 2.5);
  EXPECT_EQ(v.GetValue(3).as_text(), "x");
  Vector a;
  a.Append(Value::Array({Value::Int64(1)}));
  EXPECT_EQ(a.phys(), PhysType::kBoxed);
  EXPECT_EQ(a.GetValue(0).as_array().size(), 1u);
}

// A gathered text column points into the source's arena, which outlives the source.
TEST(Vector, GatheredTextOutlivesItsSource) {
  Vector out;
  {
    Vector src;
    for (int i = 0; i < 100; i++) src.Append(Value::Text("row " + std::to_string(i)));
    src.AppendNull();
    uint32_t sel[] = {3, 100, 99};
    out.Gather(src, sel, 3);
    src.Clear();
    src.Append(Value::Text("overwritten?"));
  }
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out.GetValue(0).as_text(), "row 3");
  EXPECT_TRUE(out.IsNull(1));
  EXPECT_EQ(out.GetValue(2).as_text(), "row 99");
  // Gathering a different physical type into it boxes; a NULL-only source fits anything.
  Vector ints;
  ints.Append(Value::Int64(5));
  uint32_t zero = 0;
  out.Gather(ints, &zero, 1);
  EXPECT_EQ(out.phys(), PhysType::kBoxed);
  EXPECT_EQ(out.GetValue(3).as_int(), 5);
  EXPECT_EQ(out.GetValue(0).as_text(), "row 3");
}

// A copy reads its source's text but appends to an arena of its own: copies of one shared
// vector (a column image) never write into it.
TEST(Vector, CopiesShareTextReadOnly) {
  Vector src;
  src.AppendText("shared");
  Vector copy = src;
  copy.AppendText("more of the copy's own text");
  Vector assigned;
  assigned = src;
  assigned.AppendText("and the assigned one's");
  Vector moved = Vector(copy);
  EXPECT_EQ(src.size(), 1u);
  EXPECT_EQ(src.texts()[0], "shared");
  EXPECT_EQ(copy.texts()[0].data(), src.texts()[0].data());  // not copied
  EXPECT_EQ(copy.texts()[1], "more of the copy's own text");
  EXPECT_EQ(assigned.texts()[1], "and the assigned one's");
  EXPECT_EQ(moved.texts()[1], "more of the copy's own text");
  // The copy keeps the bytes alive after the source is gone.
  src = Vector();
  EXPECT_EQ(copy.texts()[0], "shared");
  // Text appended to src's old arena would sit right after "shared"; it went elsewhere.
  EXPECT_NE(copy.texts()[1].data(), copy.texts()[0].data() + 6);
}

// A vector sharing another reads its arrays in place (copies of it too); the first change
// copies them, leaving the source as it was; texts gathered from it, or kept by a copy,
// outlive the source.
TEST(Vector, SharedElementsAreReadInPlaceAndCopiedOnTheFirstChange) {
  auto src = std::make_shared<Vector>();
  for (int i = 0; i < 5; i++) src->AppendText(i == 2 ? std::string() : "text " + std::to_string(i));
  src->AppendNull();
  auto ints = std::make_shared<Vector>();
  for (int i = 0; i < 6; i++) ints->AppendInt(TypeId::kInt64, i * 10);

  Vector s, n;
  s.Share(src);
  n.Share(ints);
  EXPECT_TRUE(s.shared());
  EXPECT_EQ(s.phys(), PhysType::kText);
  EXPECT_EQ(s.size(), 6u);
  EXPECT_EQ(s.texts(), src->texts());  // the same array: nothing copied
  EXPECT_EQ(n.ints(), ints->ints());
  EXPECT_TRUE(s.IsNull(5));
  EXPECT_TRUE(s.HasNulls());
  EXPECT_EQ(s.GetValue(1).as_text(), "text 1");

  Vector copy = s;  // shares too
  EXPECT_EQ(copy.texts(), src->texts());
  Vector chain;
  chain.Share(std::make_shared<Vector>(copy));  // shares the source itself
  EXPECT_EQ(chain.texts(), src->texts());

  uint32_t sel[] = {4, 0, 5};
  Vector gathered;
  gathered.Gather(s, sel, 3);
  s.AppendText("appended");  // copies first
  n.AppendInt(TypeId::kInt64, 60);
  n.mutable_ints()[0] = -1;
  EXPECT_FALSE(s.shared());
  EXPECT_NE(s.texts(), src->texts());
  EXPECT_EQ(s.size(), 7u);
  EXPECT_EQ(src->size(), 6u);
  EXPECT_EQ(ints->size(), 6u);
  EXPECT_EQ(ints->ints()[0], 0);
  EXPECT_EQ(n.ints()[0], -1);
  EXPECT_EQ(n.ints()[6], 60);
  EXPECT_EQ(s.texts()[6], "appended");

  src.reset();  // the views still read the bytes
  chain = Vector();
  EXPECT_EQ(copy.GetValue(4).as_text(), "text 4");
  EXPECT_EQ(s.texts()[1], "text 1");
  EXPECT_EQ(gathered.texts()[0], "text 4");
  EXPECT_EQ(gathered.texts()[1], "text 0");
  EXPECT_TRUE(gathered.IsNull(2));
}

// A vector made from a dictionary answers every read as one made of its views would, keeps
// its dictionary until changed, and its copies, gathers and values outlive the arena.
TEST(Vector, ADictionaryVectorReadsAsItsViews) {
  auto arena = std::make_shared<TextArena>();
  auto d = std::make_shared<TextDictionary>();
  d->values = {arena->Copy("red"), arena->Copy(""), arena->Copy("blue")};
  d->codes = {2, 0, 0, 1, 0, 2, 0};
  std::vector<uint8_t> null = {0, 0, 1, 0, 0, 0, 1};  // rows 2 and 6 NULL (code 0)
  const std::vector<std::string> want = {"blue", "red", "", "", "red", "blue", ""};
  auto check = [&](const Vector& v, const char* what) {
    ASSERT_EQ(v.size(), want.size()) << what;
    const std::string_view* t = v.texts();
    for (size_t i = 0; i < want.size(); i++) {
      EXPECT_EQ(v.IsNull(i), null[i] != 0) << what << " row " << i;
      EXPECT_EQ(t[i], want[i]) << what << " row " << i;
      EXPECT_EQ(v.GetValue(i).is_null(), null[i] != 0) << what << " row " << i;
    }
  };
  Vector v, copy, never_read;
  v.InitFromDictionary(TypeId::kText, null, d, arena);
  never_read.InitFromDictionary(TypeId::kText, {}, d, arena);
  copy = v;  // before either lays out its views
  EXPECT_EQ(v.phys(), PhysType::kText);
  EXPECT_TRUE(v.HasNulls());
  ASSERT_NE(v.dictionary(), nullptr);
  EXPECT_EQ(v.GetValue(0).as_text(), "blue");  // from the dictionary
  EXPECT_EQ(v.GetValue(4).as_text(), "red");
  EXPECT_TRUE(v.GetValue(6).is_null());
  check(v, "read");
  EXPECT_NE(v.dictionary(), nullptr);  // reading keeps it
  uint32_t sel[] = {5, 2, 1};
  Vector gathered;
  gathered.Gather(copy, sel, 3);
  arena.reset();
  d.reset();
  check(copy, "copy");
  EXPECT_EQ(gathered.texts()[0], "blue");
  EXPECT_TRUE(gathered.IsNull(1));
  EXPECT_EQ(gathered.texts()[2], "red");
  EXPECT_FALSE(never_read.HasNulls());
  EXPECT_EQ(never_read.texts()[2], "red");  // no NULLs given: code 0's value
  copy.AppendText("green");                 // a change lays the views out and drops the dictionary
  EXPECT_EQ(copy.dictionary(), nullptr);
  EXPECT_EQ(copy.texts()[0], "blue");
  EXPECT_EQ(copy.texts()[7], "green");
  Vector shared;
  auto src = std::make_shared<Vector>(v);
  shared.Share(src);
  EXPECT_EQ(shared.texts()[5], "blue");
}

// A packed integer vector reads as its values (base + entry), NULL rows as NULL (their entries
// whatever they are) and 0 in ints(); copies, gathers, shares and changes see the same values.
TEST(Vector, APackedVectorReadsAsItsValues) {
  auto bytes = std::make_shared<std::string>();
  for (uint16_t e : {7, 0, 65535, 3, 9, 1}) bytes->append(reinterpret_cast<const char*>(&e), 2);
  const std::vector<uint8_t> null = {0, 0, 0, 1, 0, 0};                   // row 3 NULL (entry 3)
  const std::vector<int64_t> want = {-993, -1000, 64535, 0, -991, -999};  // base -1000
  PackedInts p;
  p.entries = bytes->data();
  p.width = 2;
  p.base = static_cast<uint64_t>(int64_t{-1000});
  auto check = [&](const Vector& v, const char* what) {
    ASSERT_EQ(v.size(), want.size()) << what;
    for (size_t i = 0; i < want.size(); i++) {
      EXPECT_EQ(v.IsNull(i), null[i] != 0) << what << " row " << i;
      if (null[i]) {
        EXPECT_TRUE(v.GetValue(i).is_null()) << what << " row " << i;
      } else {
        EXPECT_EQ(v.GetValue(i).as_int(), want[i]) << what << " row " << i;
      }
    }
    const int64_t* x = v.ints();
    for (size_t i = 0; i < want.size(); i++) EXPECT_EQ(x[i], want[i]) << what << " row " << i;
    EXPECT_EQ(v.packed(), nullptr) << what << ": read, so unpacked";
  };
  Vector v, copy;
  v.InitPacked(TypeId::kInt32, want.size(), null, p, std::make_shared<const TextArena>(bytes));
  bytes.reset();  // the vector keeps them
  copy = v;       // before either unpacks
  ASSERT_NE(v.packed(), nullptr);
  EXPECT_EQ(v.packed()->width, 2);
  EXPECT_EQ(v.GetValue(2).as_int(), 64535);  // from the entries
  EXPECT_EQ(v.GetValue(2).type(), TypeId::kInt32);
  uint32_t sel[] = {4, 3, 0};
  Vector gathered;
  gathered.Gather(copy, sel, 3);
  EXPECT_EQ(gathered.ints()[0], -991);
  EXPECT_TRUE(gathered.IsNull(1));
  EXPECT_EQ(gathered.ints()[1], 0);
  EXPECT_EQ(gathered.ints()[2], -993);
  check(v, "read");
  check(copy, "copy");
  Vector shared, changed;
  changed.InitPacked(TypeId::kInt32, want.size(), null, p, nullptr);
  auto src = std::make_shared<Vector>(changed);
  shared.Share(src);
  EXPECT_EQ(shared.packed(), nullptr);  // a shared vector is unpacked for its readers
  check(shared, "shared");
  changed.AppendInt(TypeId::kInt32, 5);  // a change unpacks first
  EXPECT_EQ(changed.ints()[0], -993);
  EXPECT_EQ(changed.ints()[6], 5);
  // Width 0: every row holds the base (a constant), no entries at all.
  Vector constant;
  PackedInts c;
  c.base = 42;
  constant.InitPacked(TypeId::kInt64, 3, {}, c, nullptr);
  EXPECT_FALSE(constant.HasNulls());
  EXPECT_EQ(constant.GetValue(1).as_int(), 42);
  EXPECT_EQ(constant.ints()[2], 42);
}

TEST(RowDecode, StoredRowsDecodeIntoTypedColumnsAndBadOnesLeaveNoTrace) {
  std::vector<Value> row = {Value::Int32(3),
                            Value(),
                            Value::Text("abc"),
                            Value::Double(0.5),
                            Value::Numeric(ParseDecimal("-12.50").value()),
                            Value::Bool(true),
                            Value::Timestamp(123),
                            Value::Array({Value::Int64(1), Value()})};
  std::string enc;
  EncodeRow(row, &enc);
  Batch b;
  b.Reset(row.size());
  ASSERT_TRUE(AppendEncodedRow(enc, &b).ok());
  ASSERT_TRUE(AppendEncodedRow(enc, &b).ok());
  ASSERT_EQ(b.rows, 2u);
  EXPECT_EQ(b.cols[0].phys(), PhysType::kInt);
  EXPECT_EQ(b.cols[2].phys(), PhysType::kText);
  EXPECT_EQ(b.cols[4].phys(), PhysType::kDecimal);
  for (size_t c = 0; c < row.size(); c++) {
    Value v = b.Get(c, 1);
    EXPECT_EQ(v.type(), row[c].type()) << c;
    EXPECT_EQ(v.is_null() ? "NULL" : v.ToText(), row[c].is_null() ? "NULL" : row[c].ToText()) << c;
  }
  // Only the used columns decode; the others are NULL once padded.
  Batch some;
  some.Reset(row.size());
  std::vector<bool> used(row.size(), false);
  used[2] = used[4] = true;
  ASSERT_TRUE(AppendEncodedRow(enc, &some, &used).ok());
  ASSERT_TRUE(AppendEncodedRow(enc, &some, &used).ok());
  PadUnused(used, &some);
  for (size_t c = 0; c < row.size(); c++) {
    ASSERT_EQ(some.cols[c].size(), 2u);
    EXPECT_EQ(some.cols[c].IsNull(1), !used[c]) << c;
  }
  EXPECT_EQ(some.Get(2, 1).as_text(), "abc");
  // Truncated, padded, or of another width: an error, and the batch is as it was.
  for (std::string bad : {enc.substr(0, enc.size() - 3), enc + "x", std::string("\x01\x03\x05")}) {
    EXPECT_EQ(AppendEncodedRow(bad, &b).code(), Status::Code::kCorruption);
    EXPECT_EQ(b.rows, 2u);
    for (const auto& col : b.cols) EXPECT_EQ(col.size(), 2u);
  }
}

// `got` holds `want`'s rows: the same physical types, NULLs, and values of the same type and text.
void ExpectSameBatch(const Batch& want, const Batch& got) {
  ASSERT_EQ(got.rows, want.rows);
  ASSERT_EQ(got.cols.size(), want.cols.size());
  for (size_t c = 0; c < want.cols.size(); c++) {
    EXPECT_EQ(got.cols[c].phys(), want.cols[c].phys()) << c;
    for (size_t r = 0; r < want.rows; r++) {
      Value x = want.Get(c, r), y = got.Get(c, r);
      ASSERT_EQ(x.is_null(), y.is_null()) << c << "," << r;
      if (!x.is_null()) {
        EXPECT_EQ(x.type(), y.type()) << c << "," << r;
        ASSERT_EQ(x.ToText(), y.ToText()) << c << "," << r;
      }
    }
  }
}

// Encodes b into *enc and expects it to decode into the same batch, *d (call it inside
// ASSERT_NO_FATAL_FAILURE).
void RoundTrip(const Batch& b, std::string* enc, Batch* d) {
  enc->clear();
  EncodeBatch(b, enc);
  // Decoded into arrays of its own, and where it lies (offsets kept packed, in the frame).
  auto frame = std::make_shared<std::string>(*enc);
  Batch in_frame;
  ASSERT_TRUE(DecodeBatch(*frame, &in_frame, std::make_shared<TextArena>(frame)).ok());
  ExpectSameBatch(b, in_frame);
  ASSERT_TRUE(DecodeBatch(*enc, d).ok());
  ExpectSameBatch(b, *d);
}

TEST(BatchCodec, RoundTripsEveryPhysicalTypeAndRejectsEveryTruncation) {
  Batch b;
  b.Reset(7);
  for (int i = 0; i < 300; i++) {
    bool null = i % 7 == 3;
    b.cols[0].Append(null ? Value() : Value::Int32(i - 150));
    b.cols[1].Append(null ? Value() : Value::Double(i / 3.0));
    b.cols[2].Append(null ? Value()
                          : Value::Numeric(Decimal{static_cast<Int128>(i) * 1000000007, 4}));
    b.cols[3].Append(null ? Value() : Value::Text(std::string(i % 5, 'x')));
    b.cols[4].Append(i % 2 ? Value::Array({Value::Int64(i)}) : Value::Int64(i));  // boxed
    b.cols[5].AppendNull();                                                       // all NULL
    b.cols[6].Append(Value::Timestamp(i * 1000000LL));
    b.rows++;
  }
  std::string enc;
  Batch d;
  ASSERT_NO_FATAL_FAILURE(RoundTrip(b, &enc, &d));
  for (size_t cut = 0; cut < enc.size(); cut += 7) {
    EXPECT_FALSE(DecodeBatch(std::string_view(enc).substr(0, cut), &d).ok()) << cut;
  }
  EXPECT_FALSE(DecodeBatch(enc + "z", &d).ok());
  // No columns, some rows (count(*) below a projection of nothing).
  Batch none;
  none.rows = 5;
  enc.clear();
  EncodeBatch(none, &enc);
  ASSERT_TRUE(DecodeBatch(enc, &d).ok());
  EXPECT_EQ(d.rows, 5u);
  EXPECT_TRUE(d.cols.empty());
}

}  // namespace
// A text column of few distinct values travels as a dictionary and a byte per value, and
// integers in order as their differences: a constant 100-byte text and a key column cost a
// few bytes per row. Integers in order up to the top of the range and then at its bottom (a
// difference that wraps) and a column of too many distinct texts round-trip too; a code
// past the dictionary is refused.
TEST(BatchCodec, FewDistinctTextsTravelAsADictionaryAndOrderedIntsAsDifferences) {
  const std::string pad(100, 'p');
  Batch b;
  b.Reset(5);
  for (int i = 0; i < 1000; i++) {
    b.cols[0].Append(Value::Int64(1000000 + i));                                         // a key
    b.cols[1].Append(Value::Text(pad));                                                  // constant
    b.cols[2].Append(i % 10 == 9 ? Value() : Value::Text(std::string(1 + i % 3, 'f')));  // flags
    b.cols[3].Append(Value::Int64(i < 999 ? INT64_MAX - 1000 + i : INT64_MIN));  // wraps last
    b.cols[4].Append(Value::Text(std::to_string(i % 40)));                       // 40 distinct
    b.rows++;
  }
  for (bool owner : {false, true}) {
    Batch one;
    one.Reset(3);
    for (int c = 0; c < 3; c++) one.cols[c] = b.cols[c];
    one.rows = b.rows;
    auto enc = std::make_shared<std::string>();
    EncodeBatch(one, enc.get());
    EXPECT_LT(enc->size(), one.rows * 4) << "key, constant text and flags in under 4 bytes a row";
    enc->clear();
    EncodeBatch(b, enc.get());
    Batch d;
    ASSERT_TRUE(
        DecodeBatch(*enc, &d, owner ? std::make_shared<const TextArena>(enc) : nullptr).ok());
    ExpectSameBatch(b, d);
    enc.reset();  // a decoded dictionary outlives the input
    EXPECT_EQ(d.Get(1, 999).as_text(), pad);
  }
  // Three rows of two values: the dictionary (tag 2, entries "ab", "cd") and the codes 0, 1,
  // 0; a code past the dictionary does not decode.
  Batch three;
  three.Reset(1);
  for (const char* t : {"ab", "cd", "ab"}) three.cols[0].Append(Value::Text(t));
  three.rows = 3;
  std::string enc;
  EncodeBatch(three, &enc);
  ASSERT_EQ(enc.substr(enc.size() - 11), std::string("\x02\x02\x02"
                                                     "ab"
                                                     "\x02"
                                                     "cd"
                                                     "\x00\x01\x00",
                                                     11));
  Batch d;
  ASSERT_TRUE(DecodeBatch(enc, &d).ok());
  ExpectSameBatch(three, d);
  enc.back() = 2;
  EXPECT_EQ(DecodeBatch(enc, &d).code(), Status::Code::kCorruption);
  // Rows of one value (and NULLs) send the dictionary and no codes; they come back whole.
  for (bool with_null : {false, true}) {
    Batch one;
    one.Reset(1);
    for (int r = 0; r < 5; r++)
      one.cols[0].Append(with_null && r == 2 ? Value() : Value::Text("ab"));
    one.rows = 5;
    enc.clear();
    EncodeBatch(one, &enc);
    ASSERT_EQ(enc.substr(enc.size() - 5), std::string("\x02\x01\x02"
                                                      "ab",
                                                      5))
        << with_null;
    ASSERT_TRUE(DecodeBatch(enc, &d).ok());
    ExpectSameBatch(one, d);
    EXPECT_TRUE(d.cols[0].IsNull(2) == with_null);
    EXPECT_EQ(d.cols[0].texts()[4], "ab");
    enc.push_back('\0');  // a code where none belongs: bytes left over
    EXPECT_EQ(DecodeBatch(enc, &d).code(), Status::Code::kCorruption);
  }
}

// Integers travel as fixed-width offsets from the smallest value or the smallest difference,
// whichever is narrower: a key in order or a constant takes no bytes a row, each range the
// next width up; every value comes back, and NULL rows decode with a zero entry.
// Offsets take as many bits as the widest needs, whole bytes from kMaxBitEntry bits on.
TEST(BatchCodec, IntegersTravelAsTheNarrowestOffsets) {
  struct Case {
    int64_t lo,
        span;      // values lo + a random offset in [0, span]; the first row lo, the last lo + span
    bool ordered;  // values lo + i instead
    size_t bits;   // a row's entry
  };
  const Case cases[] = {
      {42, 0, false, 0},
      {-5, 0, true, 0},
      {9, 1, false, 1},
      {-3, 255, false, 8},
      {100, 256, false, 9},
      {5, 1023, false, 10},
      {0, 65535, false, 16},
      {-70000, 65536, false, 17},
      {7, 0xffffffffLL, false, 32},
      {7, 0x100000000LL, false, 64},
      {INT64_MIN, -1, false, 64},
  };
  const size_t rows = 1000;
  std::mt19937_64 rng(11);
  for (const Case& c : cases) {
    Batch b;
    b.Reset(1);
    for (size_t i = 0; i < rows; i++) {
      uint64_t off = rng();
      if (c.span != -1) off %= static_cast<uint64_t>(c.span) + 1;
      if (i == 0) off = 0;
      if (i == rows - 1) off = static_cast<uint64_t>(c.span);
      if (c.ordered) off = i;
      b.cols[0].Append(Value::Int64(static_cast<int64_t>(static_cast<uint64_t>(c.lo) + off)));
      b.rows++;
    }
    std::string enc;
    Batch d;
    ASSERT_NO_FATAL_FAILURE(RoundTrip(b, &enc, &d));
    EXPECT_GE(enc.size(), rows * c.bits / 8) << c.lo << " " << c.span;
    EXPECT_LE(enc.size(), rows * c.bits / 8 + 32) << c.lo << " " << c.span;
  }
  // NULL rows between ordered values (no difference) and around far-apart values.
  Batch b;
  b.Reset(2);
  for (int i = 0; i < 100; i++) {
    bool null = i % 3 == 0;
    b.cols[0].Append(null ? Value() : Value::Int64(i));
    b.cols[1].Append(null ? Value() : Value::Int64(i % 2 ? INT64_MAX - i : INT64_MIN + i));
    b.rows++;
  }
  std::string enc;
  Batch d;
  ASSERT_NO_FATAL_FAILURE(RoundTrip(b, &enc, &d));
  for (int c = 0; c < 2; c++) {
    for (int i = 0; i < 100; i += 3) EXPECT_EQ(d.cols[c].ints()[i], 0) << c << "," << i;
  }
}

// Entries of every bit size, in batches of sizes that end anywhere in a byte and a word,
// with and without NULLs, in order (differences) and not, come back as they went.
TEST(BatchCodec, IntegersOfEveryBitSizeRoundTrip) {
  std::mt19937_64 rng(5);
  for (int bits = 1; bits <= 34; bits++) {
    for (size_t rows : {1, 2, 7, 63, 1001, 4096}) {
      for (int shape = 0; shape < 3; shape++) {  // random, ordered, random with NULLs
        Batch b;
        b.Reset(1);
        const uint64_t top = (uint64_t{1} << bits) - 1;
        int64_t prev = -1000;
        for (size_t i = 0; i < rows; i++) {
          uint64_t off = i == 0 ? 0 : i == rows - 1 ? top : rng() % (top + 1);
          if (shape == 2 && i % 5 == 2) {
            b.cols[0].AppendNull();
          } else if (shape == 1) {
            prev += static_cast<int64_t>(off % (top + 1));
            b.cols[0].Append(Value::Int64(prev));
          } else {
            b.cols[0].Append(Value::Int64(-1000 + static_cast<int64_t>(off)));
          }
          b.rows++;
        }
        std::string enc;
        Batch d;
        ASSERT_NO_FATAL_FAILURE(RoundTrip(b, &enc, &d))
            << bits << " bits, " << rows << " rows, shape " << shape;
        if (shape != 0 || rows < 63)
          continue;  // (random values of many rows: offsets, not differences)
        // Decoded in place, the entries stay as they came; sums and extremes read them so.
        auto frame = std::make_shared<std::string>(enc);
        Batch in_frame;
        ASSERT_TRUE(DecodeBatch(*frame, &in_frame, std::make_shared<TextArena>(frame)).ok());
        const PackedInts* p = in_frame.cols[0].packed();
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(p->bits, bits % 8 != 0 && bits < kMaxBitEntry ? bits : 0) << bits;
        uint64_t sum = 0, lo = UINT64_MAX, hi = 0;
        for (size_t i = 0; i < rows; i++) {
          auto e = static_cast<uint64_t>(d.cols[0].ints()[i]) - p->base;
          sum += e;
          lo = std::min(lo, e);
          hi = std::max(hi, e);
        }
        EXPECT_EQ(SumEntries(*p, rows), sum) << bits << " bits, " << rows << " rows";
        EXPECT_EQ(MinEntry(*p, rows), lo) << bits << " bits, " << rows << " rows";
        EXPECT_EQ(MaxEntry(*p, rows), hi) << bits << " bits, " << rows << " rows";
      }
    }
  }
}

// A text column's dictionary travels with it: a column batch carries the attached one as it
// is (its codes, not ones found again), the decoded column carries it too, copies and shares
// keep it, and a change drops it.
TEST(BatchCodec, AnAttachedDictionaryTravelsAndADecodedOneIsAttached) {
  Batch b;
  b.Reset(1);
  for (int i = 0; i < 100; i++) {
    if (i % 10 == 3) {
      b.cols[0].AppendNull();
    } else {
      b.cols[0].AppendText(i % 3 ? "yes" : "no");
    }
    b.rows++;
  }
  auto d = FindDictionary(b.cols[0], b.rows, 32);
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(d->values.size(), 2u);
  // Attached with its values swapped: what travels is what is attached.
  auto swapped = std::make_shared<TextDictionary>(*d);
  std::swap(swapped->values[0], swapped->values[1]);
  b.cols[0].AttachDictionary(swapped);
  std::string enc;
  EncodeBatch(b, &enc);
  EXPECT_LT(enc.size(), 130u);  // two values and a byte per non-NULL row
  Batch got;
  ASSERT_TRUE(DecodeBatch(enc, &got).ok());
  const TextDictionary* gd = got.cols[0].dictionary();
  ASSERT_NE(gd, nullptr);
  for (int i = 0; i < 100; i++) {
    if (i % 10 == 3) {
      EXPECT_TRUE(got.cols[0].IsNull(i));
      continue;
    }
    std::string_view want = i % 3 ? "no" : "yes";  // swapped
    EXPECT_EQ(got.cols[0].texts()[i], want) << i;
    EXPECT_EQ(gd->values[gd->codes[i]], want) << i;
  }
  Vector copy = got.cols[0];
  EXPECT_EQ(copy.dictionary(), gd);
  Vector shared;
  shared.Share(std::make_shared<Vector>(got.cols[0]));
  EXPECT_EQ(shared.dictionary(), gd);
  shared.AppendNull();
  EXPECT_EQ(shared.dictionary(), nullptr);
  got.cols[0].mutable_texts()[0] = "changed";
  EXPECT_EQ(got.cols[0].dictionary(), nullptr);
  // Many distinct values: none found.
  Vector many;
  for (int i = 0; i < 40; i++) many.AppendText(std::to_string(i));
  EXPECT_EQ(FindDictionary(many, 40, 32), nullptr);
}

// A vector's attached encoding is what a column batch carries for it (made once for an
// image's columns), while the batch holds all its rows; a copy or share keeps it, a change
// drops it.
TEST(BatchCodec, AnAttachedEncodingIsSentAsItIs) {
  Batch b;
  b.Reset(1);
  Batch other;
  other.Reset(1);
  for (int i = 0; i < 50; i++) {
    b.cols[0].AppendInt(TypeId::kInt64, i);
    other.cols[0].AppendInt(TypeId::kInt64, 1000 - i);
  }
  b.rows = other.rows = 50;
  // Attached: the encoding of another vector of the same size, so the decoded values show
  // which encoding travelled.
  auto e = std::make_shared<std::string>();
  EncodeColumn(other.cols[0], 50, e.get());
  b.cols[0].AttachEncoding(e);
  Vector shared;
  shared.Share(std::make_shared<Vector>(b.cols[0]));
  Batch s;
  s.Reset(1);
  s.cols[0] = shared;
  s.rows = 50;
  for (const Batch* in : {&b, &s}) {
    std::string enc;
    EncodeBatch(*in, &enc);
    Batch d;
    ASSERT_TRUE(DecodeBatch(enc, &d).ok());
    EXPECT_EQ(d.cols[0].ints()[0], 1000);
    EXPECT_EQ(d.cols[0].ints()[49], 951);
  }
  // Fewer rows than the vector holds: encoded from the values.
  Batch part = b;
  part.rows = 10;
  std::string enc;
  EncodeBatch(part, &enc);
  Batch d;
  ASSERT_TRUE(DecodeBatch(enc, &d).ok());
  EXPECT_EQ(d.rows, 10u);
  EXPECT_EQ(d.cols[0].ints()[9], 9);
  // A change drops it.
  b.cols[0].AppendInt(TypeId::kInt64, 50);
  b.rows++;
  EXPECT_EQ(b.cols[0].encoding(), nullptr);
  enc.clear();
  EncodeBatch(b, &enc);
  ASSERT_TRUE(DecodeBatch(enc, &d).ok());
  EXPECT_EQ(d.cols[0].ints()[0], 0);
  EXPECT_EQ(d.cols[0].ints()[50], 50);
}

// Bytes changed anywhere in an encoded batch (every layout in it) decode or are refused as
// Corruption; a decoded batch has the row count it claims in every column.
TEST(BatchCodec, NullBitmapsPackEightRowsAByteAndAColumnOfNullsTakesNone) {
  std::mt19937 rng(11);
  for (size_t rows : {1, 7, 8, 9, 63, 64, 65, 2051}) {
    Batch b;
    b.Reset(3);
    for (size_t i = 0; i < rows; i++) {
      b.cols[0].Append(rng() % 3 == 0 ? Value() : Value::Int64(static_cast<int64_t>(rng() % 1000)));
      b.cols[1].Append(rng() % 2 ? Value() : Value::Text(std::to_string(rng())));
      b.cols[2].AppendNull();  // a column nobody reads
      b.rows++;
    }
    std::string enc;
    Batch d;
    ASSERT_NO_FATAL_FAILURE(RoundTrip(b, &enc, &d)) << rows;
    // The NULL column: its types and a flag, no bitmap; it decodes to NULLs.
    std::string col;
    EncodeColumn(b.cols[2], rows, &col);
    EXPECT_EQ(col.size(), 3u) << rows;
    EXPECT_EQ(d.cols[2].size(), rows);
    EXPECT_TRUE(d.cols[2].IsNull(rows - 1));
    // A column with NULLs: types, flag, one bit a row, then its values.
    if (b.cols[1].phys() == PhysType::kText && b.cols[1].HasNulls()) {
      col.clear();
      EncodeColumn(b.cols[1], rows, &col);
      EXPECT_GE(col.size(), 3 + (rows + 7) / 8) << rows;
    }
  }
  // "Every row NULL" is refused for a column whose type says it has values.
  Batch b;
  b.Reset(1);
  b.cols[0].AppendNull();
  b.rows = 1;
  std::string enc;
  EncodeBatch(b, &enc);
  ASSERT_EQ(enc.size(), 5u);  // columns, rows, then the column's three bytes
  enc[2] = static_cast<char>(PhysType::kInt);
  Batch d;
  EXPECT_EQ(DecodeBatch(enc, &d).code(), Status::Code::kCorruption);
}

TEST(BatchCodec, ChangedBytesDecodeOrAreRefused) {
  Batch b;
  b.Reset(4);
  for (int i = 0; i < 200; i++) {
    b.cols[0].Append(Value::Int64(i));                                           // differences
    b.cols[1].Append(i % 9 == 0 ? Value() : Value::Text(i % 2 ? "yes" : "no"));  // dictionary
    b.cols[2].Append(Value::Text(std::to_string(i * 7919)));                     // plain
    b.cols[3].Append(Value::Int64(i % 2 ? -i * 1000003LL : i * 999983LL));       // plain ints
    b.rows++;
  }
  std::string enc;
  EncodeBatch(b, &enc);
  std::mt19937 rng(7);
  int refused = 0;
  for (int round = 0; round < 3000; round++) {
    std::string bad = enc;
    for (int k = 0; k < 1 + round % 3; k++) bad[rng() % bad.size()] = static_cast<char>(rng());
    Batch d;
    Status s = DecodeBatch(bad, &d);
    if (!s.ok()) {
      EXPECT_EQ(s.code(), Status::Code::kCorruption);
      refused++;
      continue;
    }
    for (const auto& c : d.cols) ASSERT_EQ(c.size(), d.rows);
  }
  EXPECT_GT(refused, 0);
}

TEST(BatchCodec, TextDecodedWithItsOwnerIsAViewIntoTheInputThatVectorsKeepAlive) {
  Batch b;
  b.Reset(2);
  for (int i = 0; i < 50; i++) {
    b.cols[0].Append(
        i % 9 == 4 ? Value() : Value::Text(std::string(i % 13, static_cast<char>('a' + i % 26))));
    b.cols[1].Append(Value::Int32(i));
    b.rows++;
  }
  auto enc = std::make_shared<std::string>();
  EncodeBatch(b, enc.get());
  Batch d;
  ASSERT_TRUE(DecodeBatch(*enc, &d, std::make_shared<const TextArena>(enc)).ok());
  const char* lo = enc->data();
  const char* hi = lo + enc->size();
  for (size_t r = 0; r < b.rows; r++) {
    ASSERT_EQ(b.Get(0, r).is_null(), d.Get(0, r).is_null()) << r;
    if (b.Get(0, r).is_null()) continue;
    EXPECT_EQ(d.Get(0, r).ToText(), b.Get(0, r).ToText()) << r;
    std::string_view t = d.cols[0].texts()[r];
    if (!t.empty()) {
      EXPECT_TRUE(t.data() >= lo && t.data() + t.size() <= hi) << r << ": copied, not a view";
    }
  }
  // The input lives as long as a vector (or a copy, or a gather) that points into it.
  std::weak_ptr<std::string> input = enc;
  enc.reset();
  Vector copy = d.cols[0];
  Vector gathered;
  const uint32_t sel[] = {1, 2};
  gathered.Gather(d.cols[0], sel, 2);
  d = Batch();
  EXPECT_FALSE(input.expired());
  EXPECT_EQ(copy.GetValue(12).ToText(), std::string(12, 'm'));
  copy = Vector();
  EXPECT_FALSE(input.expired());
  EXPECT_EQ(gathered.GetValue(1).ToText(), "cc");
  gathered = Vector();
  EXPECT_TRUE(input.expired());
  // Malformed input fails as without an owner.
  std::string bad = "\x01\x02\x04\x05\x00\x09zz";
  EXPECT_FALSE(DecodeBatch(bad, &d, std::make_shared<const TextArena>()).ok());
}

}  // namespace wattdb::exec
