#include "master/pgwire/pg_protocol.h"

#include <gtest/gtest.h>

#include "common/sqlstate.h"
#include "master/pgwire/pg_copy.h"
#include "master/pgwire/pg_values.h"

namespace wattdb::master::pg {
namespace {

std::string Hex(const std::string& s) {
  std::string h;
  for (unsigned char c : s) h += fmt::format("{:02x}", c);
  return h;
}

// Rows of a parsed COPY piece as strings, NULL as "<null>".
std::vector<std::vector<std::string>> CopyFields(std::string_view data, bool csv,
                                                 bool header = false) {
  sql::CopyStmt s;
  s.csv = csv;
  s.header = header;
  if (csv) {
    s.delimiter = ',';
    s.null_string = "";
  }
  CopyRows rows;
  Status st = ParseCopyData(data, s, &rows);
  if (!st.ok()) return {{"ERROR " + st.sqlstate() + " " + st.message()}};
  std::vector<std::vector<std::string>> out;
  for (size_t r = 0; r < rows.rows(); r++) {
    auto& row = out.emplace_back();
    for (size_t f = rows.row_begin(r); f < rows.row_end(r); f++) {
      row.push_back(rows.null(f) ? "<null>" : std::string(rows.text(f)));
    }
  }
  return out;
}

using Fields = std::vector<std::vector<std::string>>;

TEST(PgCopy, CsvFieldsAsPostgresReadsThem) {
  // Quotes, a doubled quote, a delimiter and a newline inside quotes, an unquoted empty field
  // (NULL) next to a quoted one (empty text), CRLF line ends, no newline at the end.
  EXPECT_EQ(CopyFields("1,\"a,b\",\"say \"\"hi\"\"\"\r\n2,,\"\"\n3,\"two\nlines\",x", true),
            (Fields{{"1", "a,b", "say \"hi\""}, {"2", "<null>", ""}, {"3", "two\nlines", "x"}}));
  // A header line is dropped; the end marker ends the data.
  EXPECT_EQ(CopyFields("id,name\n1,one\n\\.\n2,two\n", true, true), (Fields{{"1", "one"}}));
  // Text around a quoted part joins it (PostgreSQL reads a"b"c as abc).
  EXPECT_EQ(CopyFields("a\"b\"c,d\n", true), (Fields{{"abc", "d"}}));
  EXPECT_EQ(CopyFields("1,\"open\n2,x\n", true)[0][0],
            "ERROR 22P04 unterminated CSV quoted field (line 3)");
}

// The session parses what has arrived so far and keeps a row cut by the end of a piece for
// the next: wherever the stream is cut, the rows are those of the whole stream.
TEST(PgCopy, APieceCutAnywhereGivesTheRowsOfTheWholeStream) {
  const std::string csv =
      "1,\"a,b\",\"say \"\"hi\"\"\"\r\n2,,\"\"\n3,\"two\nlines\",x\r\n4,\"\",\n";
  const std::string text = "1\tone\\ttab\t\\N\n2\t\\\\back\tx\\ny\r\n3\t\t\n";
  for (bool is_csv : {true, false}) {
    const std::string& data = is_csv ? csv : text;
    const Fields whole = CopyFields(data, is_csv);
    ASSERT_EQ(whole.size(), is_csv ? 4u : 3u);
    sql::CopyStmt s;
    s.csv = is_csv;
    if (is_csv) {
      s.delimiter = ',';
      s.null_string = "";
    }
    for (size_t cut = 0; cut <= data.size(); cut++) {
      CopyRows first;
      size_t used = 0;
      ASSERT_TRUE(ParseCopyData(std::string_view(data).substr(0, cut), s, &first, &used).ok());
      ASSERT_LE(used, cut);
      Fields got;
      for (size_t r = 0; r < first.rows(); r++) {
        auto& row = got.emplace_back();
        for (size_t f = first.row_begin(r); f < first.row_end(r); f++) {
          row.push_back(first.null(f) ? "<null>" : std::string(first.text(f)));
        }
      }
      for (auto& row : CopyFields(std::string_view(data).substr(used), is_csv)) got.push_back(row);
      EXPECT_EQ(got, whole) << (is_csv ? "csv" : "text") << " cut at " << cut;
    }
  }
}

TEST(PgCopy, TextFieldsAsPostgresReadsThem) {
  EXPECT_EQ(CopyFields("1\tone\\ttab\t\\N\n2\t\\\\back\tx\\ny\n", false),
            (Fields{{"1", "one\ttab", "<null>"}, {"2", "\\back", "x\ny"}}));
  EXPECT_EQ(CopyFields("h1\th2\n1\t2\r\n\\.\n3\t4\n", false, true), (Fields{{"1", "2"}}));
}

TEST(PgProtocol, MessagesMatchTheSpecLayout) {
  MessageWriter w;
  w.AuthenticationOk();
  EXPECT_EQ(Hex(w.buffer()), "520000000800000000");
  w.Clear();
  w.ReadyForQuery('I');
  EXPECT_EQ(Hex(w.buffer()), "5a0000000549");
  w.Clear();
  w.CommandComplete("SELECT 1");
  EXPECT_EQ(w.buffer(), std::string("C\0\0\0\x0dSELECT 1\0", 14));
  w.Clear();
  std::string one = "1";
  w.DataRow({&one, nullptr});
  EXPECT_EQ(Hex(w.buffer()),
            "440000000f0002000000013"
            "1ffffffff");
}

TEST(PgProtocol, RowDescriptionCarriesTypeOids) {
  MessageWriter w;
  w.RowDescription({"a", "b"}, {SqlType{TypeId::kInt64}, SqlType{TypeId::kText, 10}});
  const std::string& b = w.buffer();
  ASSERT_EQ(b[0], 'T');
  // "a\0" + table oid(4) + attnum(2) then the type oid.
  size_t p = 7 + 2;
  auto i32 = [&](size_t at) {
    return (uint8_t(b[at]) << 24) | (uint8_t(b[at + 1]) << 16) | (uint8_t(b[at + 2]) << 8) |
           uint8_t(b[at + 3]);
  };
  EXPECT_EQ(i32(p + 6), 20);    // int8
  size_t q = p + 18 + 2;        // second field after "b\0"
  EXPECT_EQ(i32(q + 6), 1043);  // varchar
  EXPECT_EQ(i32(q + 12), 14);   // typmod = n + 4
}

TEST(PgProtocol, ErrorHasSqlStateAndPosition) {
  MessageWriter w;
  w.ErrorOrNotice('E', "ERROR", sqlstate::kSyntaxError, "syntax error at or near \"x\"", 8);
  const std::string& b = w.buffer();
  EXPECT_NE(b.find(std::string("C42601\0", 7)), std::string::npos);
  EXPECT_NE(b.find(std::string("P8\0", 3)), std::string::npos);
  EXPECT_EQ(b.back(), '\0');
}

TEST(PgProtocol, StartupParamsAreValidated) {
  auto ok = ParseStartupParams(std::string("user\0u\0database\0d\0\0", 19));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->size(), 2u);
  EXPECT_EQ((*ok)[1].second, "d");
  EXPECT_FALSE(ParseStartupParams(std::string("user\0u", 6)).ok());
  EXPECT_FALSE(ParseStartupParams(std::string("user\0u\0\0junk", 12)).ok());
  EXPECT_FALSE(ParseStartupParams(std::string("user", 4)).ok());
}

// NUMERIC's binary form: ndigits, weight, sign, dscale, then base-10000 digits.
TEST(PgValues, NumericBinaryFormat) {
  std::string out;
  EncodeValue(Value::Numeric(*ParseDecimal("12.345")), SqlType{TypeId::kNumeric}, true, &out);
  EXPECT_EQ(out, std::string("\x00\x02\x00\x00\x00\x00\x00\x03\x00\x0c\x0d\x7a", 12));
  for (const char* s : {"0", "0.00", "-1", "10000", "123456789.000001", "-0.0005",
                        "99999999999999999999999999.9999"}) {
    Decimal d = *ParseDecimal(s);
    std::string bin;
    EncodeValue(Value::Numeric(d), SqlType{TypeId::kNumeric}, true, &bin);
    auto back = DecodeParam(bin, true, SqlType{TypeId::kNumeric}, 1700);
    ASSERT_TRUE(back.ok()) << s << ": " << back.status().ToString();
    EXPECT_EQ(back->ToText(), s);
  }
  EXPECT_FALSE(DecodeParam(std::string("\x00\x01", 2), true, SqlType{TypeId::kNumeric}, 1700).ok());
}

// libpq's PGOPTIONS: -c settings, escaped blanks, --name=value; anything else is refused.
TEST(PgProtocol, StartupOptions) {
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  auto r = ParseStartupOptions(
      "-c default_transaction_isolation=repeatable\\ read  -cwork_mem=8MB --statement-timeout=5s");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, (Pairs{{"default_transaction_isolation", "repeatable read"},
                       {"work_mem", "8MB"},
                       {"statement_timeout", "5s"}}));
  EXPECT_TRUE(ParseStartupOptions("")->empty());
  EXPECT_EQ(ParseStartupOptions("-c").status().sqlstate(), sqlstate::kInvalidParameterValue);
  EXPECT_EQ(ParseStartupOptions("-c work_mem").status().sqlstate(),
            sqlstate::kInvalidParameterValue);
  EXPECT_EQ(ParseStartupOptions("verbose").status().sqlstate(), sqlstate::kInvalidParameterValue);
}

}  // namespace
}  // namespace wattdb::master::pg
