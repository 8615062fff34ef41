#include "master/sql/copy_encoder.h"

#include <optional>
#include <random>

#include <gtest/gtest.h>

#include "common/codec.h"
#include "common/sqlstate.h"

namespace wattdb::master {
namespace {

TableSchema Table() {
  TableSchema t;
  t.id = 7;
  t.name = "t";
  t.columns = {{"id", {TypeId::kInt64}, true},
               {"n", {TypeId::kInt32}},
               {"price", SqlType::Numeric(15, 2)},
               {"x", {TypeId::kNumeric}},
               {"at", {TypeId::kTimestamp}},
               {"s", {TypeId::kText}},
               {"v", {TypeId::kText, 5}},
               {"c", {TypeId::kText, -3}},
               {"b", {TypeId::kBool}},
               {"d", {TypeId::kDouble}},
               {"k2", {TypeId::kText}, true}};
  t.key_columns = {10, 0};  // not in column order
  return t;
}

using Fields = std::vector<std::optional<std::string>>;  // nullopt: NULL

CopyRows Rows(const std::vector<Fields>& rows) {
  CopyRows out;
  for (const auto& r : rows) {
    for (const auto& f : r) {
      if (f) out.Append(*f);
      out.EndField(!f);
    }
    out.EndRow();
  }
  return out;
}

// What the row's Values encode to: the reference the encoder must match byte for byte.
void Reference(const TableSchema& t, const std::vector<int>& cols, const Fields& fields,
               const std::vector<std::pair<int, int64_t>>& generated, std::string* key,
               std::string* row) {
  std::vector<Value> values(t.columns.size());
  for (size_t f = 0; f < cols.size(); f++) {
    if (fields[f]) values[cols[f]] = Value::FromText(*fields[f], t.columns[cols[f]].type).value();
  }
  for (auto [c, v] : generated) {
    values[c] = t.columns[c].type.id == TypeId::kInt32 ? Value::Int32(v) : Value::Int64(v);
  }
  *key = EncodeKey(t, values);
  row->clear();
  EncodeRow(values, row);
}

CopyEncoder::GenerateFn NoDraw() {
  return [](int) -> Result<Value> { return Status::Internal("nothing to generate"); };
}

TEST(CopyEncoderTest, WritesTheBytesOfTheRowsValues) {
  TableSchema t = Table();
  std::vector<int> cols = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  std::vector<Fields> rows = {
      {"1", "2", "3.14", "-0.000123", "2024-01-02 03:04:05.123456", "hello", "abc", "ab", "true",
       "2.5", "k"},
      {" 42 ", "+5", "1.005", "12345678901234567890.5", "1999-12-31", "", "", "", "f", "-0",
       "ä\tö"},
      {"-9223372036854775808", std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
       std::nullopt, std::nullopt, std::nullopt, std::nullopt, "z"},
  };
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200; i++) {
    auto num = [&] { return std::to_string(static_cast<int64_t>(rng() % 2000000) - 1000000); };
    rows.push_back(
        {num(), std::to_string(static_cast<int32_t>(rng())),
         num() + "." + std::to_string(rng() % 1000), num() + "." + std::to_string(rng() % 100000),
         "2020-0" + std::to_string(1 + rng() % 9) + "-15 10:00", std::string(rng() % 40, 'x'),
         std::string(rng() % 6, 'y'), "q", rng() % 2 ? "t" : "false",
         std::to_string(static_cast<double>(rng() % 1000) / 7), num()});
  }
  CopyRows in = Rows(rows);
  CopyEncoder enc(t, cols, {});
  for (size_t r = 0; r < rows.size(); r++) {
    std::string key, row, want_key, want_row;
    size_t field = 99;
    ASSERT_TRUE(enc.Encode(in, r, NoDraw(), &key, &row, &field).ok()) << r;
    Reference(t, cols, rows[r], {}, &want_key, &want_row);
    EXPECT_EQ(key, want_key) << r;
    EXPECT_EQ(row, want_row) << r;
  }
}

// Columns the COPY leaves out are NULL, or generated (the hidden row id, a serial, a
// DEFAULT): each row asks for its own values.
TEST(CopyEncoderTest, ColumnsLeftOutAreNullOrGenerated) {
  TableSchema t;
  t.id = 8;
  t.name = "h";
  t.columns = {{"a", {TypeId::kInt32}},
               {"ser", {TypeId::kInt32}},
               {"b", {TypeId::kText}},
               {"rowid", {TypeId::kInt64}, true, true},
               {"dflt", SqlType::Numeric(10, 2)},
               {"none", {TypeId::kText}}};
  t.columns[1].serial = true;
  t.key_columns = {3};
  std::vector<int> cols = {2, 0};  // b, a
  std::vector<Fields> rows = {{"x", "1"}, {std::nullopt, "2"}};
  CopyRows in = Rows(rows);
  CopyEncoder enc(t, cols, {1, 3, 4});
  std::vector<int> asked;
  CopyEncoder::GenerateFn generate = [&](int column) -> Result<Value> {
    asked.push_back(column);
    if (column == 4) return Value::Numeric(Decimal{1250, 2});
    return column == 1 ? Value::Int32(100 + asked.size()) : Value::Int64(100 + asked.size());
  };
  for (size_t r = 0; r < rows.size(); r++) {
    std::string key, row, want_key, want_row;
    size_t field = 0;
    ASSERT_TRUE(enc.Encode(in, r, generate, &key, &row, &field).ok());
    std::vector<Value> values(t.columns.size());
    values[2] = rows[r][0] ? Value::Text(*rows[r][0]) : Value();
    values[0] = Value::Int32(std::stoi(*rows[r][1]));
    values[1] = Value::Int32(100 + static_cast<int64_t>(asked.size()) - 2);
    values[3] = Value::Int64(100 + static_cast<int64_t>(asked.size()) - 1);
    values[4] = Value::Numeric(Decimal{1250, 2});
    want_key = EncodeKey(t, values);
    EncodeRow(values, &want_row);
    EXPECT_EQ(key, want_key);
    EXPECT_EQ(row, want_row);
  }
  EXPECT_EQ(asked, (std::vector<int>{1, 3, 4, 1, 3, 4}));

  CopyEncoder::GenerateFn failing = [](int) -> Result<Value> {
    return Status::Sql(sqlstate::kSequenceGeneratorLimitExceeded, "sequence exhausted");
  };
  std::string key, row;
  size_t field = 0;
  EXPECT_EQ(enc.Encode(in, 0, failing, &key, &row, &field).sqlstate(),
            sqlstate::kSequenceGeneratorLimitExceeded);
  EXPECT_EQ(field, CopyEncoder::kNoField);
}

TEST(CopyEncoderTest, BadFieldsNameTheirField) {
  TableSchema t = Table();
  std::vector<int> cols = {10, 0, 1, 2, 6};  // k2, id, n, price, v
  struct Case {
    Fields fields;
    std::string sqlstate;
    size_t field;
  };
  std::vector<Case> cases = {
      {{"k", "abc", "1", "1", "a"}, sqlstate::kInvalidTextRepresentation, 1},
      {{"k", "1", "3000000000", "1", "a"}, sqlstate::kNumericValueOutOfRange, 2},
      {{"k", "1", "1", "12345678901234.5", "a"}, sqlstate::kNumericValueOutOfRange, 3},
      {{"k", "1", "1", "1..2", "a"}, sqlstate::kInvalidTextRepresentation, 3},
      {{"k", "1", "1", "1", "toolong"}, sqlstate::kStringDataRightTruncation, 4},
      {{"k", std::nullopt, "1", "1", "a"}, sqlstate::kNotNullViolation, 5},  // the row as a whole
      {{std::nullopt, "1", "1", "1", "a"}, sqlstate::kNotNullViolation, 5},
  };
  CopyEncoder enc(t, cols, {});
  for (const auto& c : cases) {
    CopyRows in = Rows({c.fields});
    std::string key, row;
    size_t field = 99;
    Status st = enc.Encode(in, 0, NoDraw(), &key, &row, &field);
    EXPECT_EQ(st.sqlstate(), c.sqlstate) << st.ToString();
    EXPECT_EQ(field, c.field) << st.ToString();
    // The same error as the Value path's.
    if (c.sqlstate != sqlstate::kNotNullViolation) {
      size_t f = c.field;
      EXPECT_EQ(st.message(),
                Value::FromText(*c.fields[f], t.columns[cols[f]].type).status().message());
    }
  }
}

}  // namespace
}  // namespace wattdb::master
