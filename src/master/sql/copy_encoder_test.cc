#include "master/sql/copy_encoder.h"

#include <gtest/gtest.h>

#include <optional>
#include <random>

#include "common/codec.h"

namespace wattdb::master {
namespace {

TableSchema Table() {
  TableSchema t;
  t.id = 7;
  t.name = "t";
  t.columns = {{"id", {TypeId::kInt64}, true},  {"n", {TypeId::kInt32}},       {"price", SqlType::Numeric(15, 2)},
               {"x", {TypeId::kNumeric}},       {"at", {TypeId::kTimestamp}}, {"s", {TypeId::kText}},
               {"v", {TypeId::kText, 5}},       {"c", {TypeId::kText, -3}},   {"b", {TypeId::kBool}},
               {"d", {TypeId::kDouble}},        {"k2", {TypeId::kText}, true}};
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
               const std::vector<std::pair<int, int64_t>>& generated, std::string* key, std::string* row) {
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

CopyEncoder::DrawFn NoDraw() {
  return [](int, bool) -> Result<uint64_t> { return Status::Internal("nothing to draw"); };
}

TEST(CopyEncoderTest, WritesTheBytesOfTheRowsValues) {
  TableSchema t = Table();
  std::vector<int> cols = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  std::vector<Fields> rows = {
      {"1", "2", "3.14", "-0.000123", "2024-01-02 03:04:05.123456", "hello", "abc", "ab", "true", "2.5", "k"},
      {" 42 ", "+5", "1.005", "12345678901234567890.5", "1999-12-31", "", "", "", "f", "-0", "ä\tö"},
      {"-9223372036854775808", std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
       std::nullopt, std::nullopt, std::nullopt, "z"},
  };
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200; i++) {
    auto num = [&] { return std::to_string(static_cast<int64_t>(rng() % 2000000) - 1000000); };
    rows.push_back({num(), std::to_string(static_cast<int32_t>(rng())), num() + "." + std::to_string(rng() % 1000),
                    num() + "." + std::to_string(rng() % 100000), "2020-0" + std::to_string(1 + rng() % 9) + "-15 10:00",
                    std::string(rng() % 40, 'x'), std::string(rng() % 6, 'y'), "q", rng() % 2 ? "t" : "false",
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

// Columns the COPY leaves out are NULL, or drawn: the hidden row id, a serial.
TEST(CopyEncoderTest, ColumnsLeftOutAreNullOrDrawn) {
  TableSchema t;
  t.id = 8;
  t.name = "h";
  t.columns = {{"a", {TypeId::kInt32}}, {"ser", {TypeId::kInt32}}, {"b", {TypeId::kText}}, {"rowid", {TypeId::kInt64}, true, true}};
  t.columns[1].serial = true;
  t.key_columns = {3};
  std::vector<int> cols = {2, 0};  // b, a
  std::vector<Fields> rows = {{"x", "1"}, {std::nullopt, "2"}};
  CopyRows in = Rows(rows);
  CopyEncoder enc(t, cols, {1});
  std::vector<std::pair<int, bool>> draws;
  CopyEncoder::DrawFn draw = [&](int column, bool row_id) -> Result<uint64_t> {
    draws.emplace_back(column, row_id);
    return 100 + draws.size();
  };
  for (size_t r = 0; r < rows.size(); r++) {
    std::string key, row, want_key, want_row;
    size_t field = 0;
    ASSERT_TRUE(enc.Encode(in, r, draw, &key, &row, &field).ok());
    int64_t serial = 100 + static_cast<int64_t>(draws.size()) - 1, rowid = 100 + static_cast<int64_t>(draws.size());
    Reference(t, cols, rows[r], {{1, serial}, {3, rowid}}, &want_key, &want_row);
    EXPECT_EQ(key, want_key);
    EXPECT_EQ(row, want_row);
  }
  ASSERT_EQ(draws.size(), 4u);
  EXPECT_EQ(draws[0], std::make_pair(1, false));
  EXPECT_EQ(draws[1], std::make_pair(3, true));
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
      {{"k", "abc", "1", "1", "a"}, "22P02", 1},
      {{"k", "1", "3000000000", "1", "a"}, "22003", 2},
      {{"k", "1", "1", "12345678901234.5", "a"}, "22003", 3},
      {{"k", "1", "1", "1..2", "a"}, "22P02", 3},
      {{"k", "1", "1", "1", "toolong"}, "22001", 4},
      {{"k", std::nullopt, "1", "1", "a"}, "23502", 5},  // the row as a whole
      {{std::nullopt, "1", "1", "1", "a"}, "23502", 5},
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
    if (c.sqlstate != "23502") {
      size_t f = c.field;
      EXPECT_EQ(st.message(), Value::FromText(*c.fields[f], t.columns[cols[f]].type).status().message());
    }
  }
}

}  // namespace
}  // namespace wattdb::master
