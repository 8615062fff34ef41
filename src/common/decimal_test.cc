#include "common/decimal.h"

#include <algorithm>
#include <random>

#include <gtest/gtest.h>

#include "common/sqlstate.h"

namespace wattdb {
namespace {

Decimal D(const char* s) {
  auto d = ParseDecimal(s);
  EXPECT_TRUE(d.ok()) << s << ": " << d.status().ToString();
  return d.ok() ? *d : Decimal{};
}

std::string F(const Result<Decimal>& d) {
  return d.ok() ? FormatDecimal(*d) : d.status().sqlstate();
}

TEST(Decimal, ParsesAndPrintsWithDisplayScale) {
  EXPECT_EQ(F(D("1.50")), "1.50");
  EXPECT_EQ(F(D("  -0.05 ")), "-0.05");
  EXPECT_EQ(F(D("+12")), "12");
  EXPECT_EQ(F(D("1e3")), "1000");
  EXPECT_EQ(F(D("1.5e-3")), "0.0015");
  EXPECT_EQ(F(D(".5")), "0.5");
  EXPECT_EQ(F(D("007.")), "7");
  EXPECT_EQ(ParseDecimal("1.2.3").status().sqlstate(), sqlstate::kInvalidTextRepresentation);
  EXPECT_EQ(ParseDecimal("abc").status().sqlstate(), sqlstate::kInvalidTextRepresentation);
  EXPECT_EQ(ParseDecimal("1e").status().sqlstate(), sqlstate::kInvalidTextRepresentation);
  EXPECT_EQ(ParseDecimal("1e40").status().sqlstate(), sqlstate::kNumericValueOutOfRange);
  EXPECT_EQ(F(D("99999999999999999999999999999999999999")),
            "99999999999999999999999999999999999999");
  EXPECT_EQ(ParseDecimal("999999999999999999999999999999999999999").status().sqlstate(),
            sqlstate::kNumericValueOutOfRange);
  // Found by fuzzing: more fractional digits than fit, with an integer part, overflowed the
  // 128-bit accumulator after rounding. More than 38 significant digits remain: 22003.
  EXPECT_EQ(ParseDecimal("24." + std::string(200, '1')).status().sqlstate(),
            sqlstate::kNumericValueOutOfRange);
  EXPECT_EQ(F(D(("0." + std::string(60, '1')).c_str())), "0." + std::string(38, '1'));
  // The short plain forms (a fast path) answer as the general parse does.
  EXPECT_EQ(F(D("-0")), "0");
  EXPECT_EQ(F(D("-0.00")), "0.00");
  EXPECT_EQ(F(D("5.")), "5");
  EXPECT_EQ(F(D("-.25")), "-0.25");
  EXPECT_EQ(F(D("999999999999999999")), "999999999999999999");  // 18 digits
  EXPECT_EQ(F(D("-99999999999999999")), "-99999999999999999");
  EXPECT_EQ(F(D("9999999999999999999")), "9999999999999999999");  // 19: the general path
  EXPECT_EQ(F(D("12345.678901234567")), "12345.678901234567");
  for (const char* bad : {"", "-", ".", "-.", "1-", "1..2", "1,5", "--1", "1 2"}) {
    EXPECT_EQ(ParseDecimal(bad).status().sqlstate(), sqlstate::kInvalidTextRepresentation)
        << "'" << bad << "'";
  }
}

// Expected values are PostgreSQL 15's.
TEST(Decimal, ArithmeticFollowsPostgresScales) {
  EXPECT_EQ(F(DivDecimal(D("1"), D("3"))), "0.33333333333333333333");
  EXPECT_EQ(F(DivDecimal(D("10"), D("4"))), "2.5000000000000000");
  EXPECT_EQ(F(DivDecimal(D("100"), D("3"))), "33.3333333333333333");
  EXPECT_EQ(F(DivDecimal(D("2"), D("3"))), "0.66666666666666666667");
  EXPECT_EQ(F(DivDecimal(D("123456789.123"), D("7"))), "17636684.160428571429");
  EXPECT_EQ(F(DivDecimal(D("0.05"), D("7"))), "0.00714285714285714286");
  EXPECT_EQ(F(DivDecimal(D("1e20"), D("3"))), "33333333333333333333");
  EXPECT_EQ(F(DivDecimal(D("1"), D("0"))), sqlstate::kDivisionByZero);
  EXPECT_EQ(F(MulDecimal(D("1.5"), D("1.50"))), "2.250");
  EXPECT_EQ(F(MulDecimal(D("1e-3"), D("10"))), "0.010");
  EXPECT_EQ(F(AddDecimal(D("0.1"), D("0.25"))), "0.35");
  EXPECT_EQ(F(SubDecimal(D("1"), D("1.001"))), "-0.001");
  EXPECT_EQ(F(ModDecimal(D("7.5"), D("2"))), "1.5");
  EXPECT_EQ(F(ModDecimal(D("-7.5"), D("2"))), "-1.5");
  EXPECT_EQ(F(MulDecimal(D("1e20"), D("1e20"))), sqlstate::kNumericValueOutOfRange);
}

TEST(Decimal, RoundingIsHalfAwayFromZero) {
  EXPECT_EQ(F(RoundDecimal(D("2.5"), 0)), "3");
  EXPECT_EQ(F(RoundDecimal(D("-2.5"), 0)), "-3");
  EXPECT_EQ(F(RoundDecimal(D("1234.567"), -2)), "1200");
  EXPECT_EQ(F(RoundDecimal(D("1.005"), 2)), "1.01");
  EXPECT_EQ(F(RoundDecimal(D("1.5"), 3)), "1.500");
  EXPECT_EQ(F(TruncDecimal(D("-1.99"), 1)), "-1.9");
  EXPECT_EQ(FormatDecimal(CeilDecimal(D("-1.5"))), "-1");
  EXPECT_EQ(FormatDecimal(FloorDecimal(D("-1.5"))), "-2");
  EXPECT_EQ(F(ApplyTypmod(D("12.345"), 5, 2)), "12.35");
  EXPECT_EQ(F(ApplyTypmod(D("1234.5"), 5, 2)), sqlstate::kNumericValueOutOfRange);
  EXPECT_EQ(*DecimalToInt(D("-2.5")), -3);
  EXPECT_EQ(F(DecimalFromDouble(0.1)), "0.1");
  EXPECT_DOUBLE_EQ(DecimalToDouble(D("0.33333333333333333333")), 1.0 / 3);
}

TEST(Decimal, KeyEncodingOrdersByValue) {
  std::vector<const char*> sorted = {"-1000",  "-12.5", "-1.55", "-1.5", "-0.05", "0",
                                     "0.0001", "0.05",  "1",     "1.5",  "1.55",  "9.99",
                                     "10",     "12",    "1200",  "1e30"};
  std::vector<std::string> keys;
  for (const char* s : sorted) {
    std::string k;
    EncodeDecimalKey(D(s), &k);
    keys.push_back(k);
  }
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end());
  std::string a, b;
  EncodeDecimalKey(D("1.50"), &a);
  EncodeDecimalKey(D("1.5"), &b);
  EXPECT_EQ(a, b);
  EXPECT_EQ(CompareDecimal(D("1.50"), D("1.5")), 0);
  EXPECT_EQ(HashDecimal(D("1.50")), HashDecimal(D("1.5")));
  EXPECT_LT(CompareDecimal(D("-0.5"), D("0.25")), 0);
}

}  // namespace
}  // namespace wattdb
