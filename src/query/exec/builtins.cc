#include "query/exec/builtins.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "common/sqlstate.h"

namespace wattdb::exec {

namespace {

// UTF-8 code points of `s` as byte offsets (PostgreSQL counts characters, not bytes).
std::vector<size_t> CharStarts(const std::string& s) {
  std::vector<size_t> out;
  for (size_t i = 0; i < s.size(); i++) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) out.push_back(i);
  }
  return out;
}

// Characters [from, from + n) of `s` (0-based, clamped).
std::string Chars(const std::string& s, int64_t from, int64_t n) {
  auto starts = CharStarts(s);
  int64_t len = static_cast<int64_t>(starts.size());
  int64_t a = std::clamp<int64_t>(from, 0, len),
          b = std::clamp<int64_t>(n < 0 ? len : from + n, a, len);
  size_t begin = a < len ? starts[a] : s.size(), end = b < len ? starts[b] : s.size();
  return s.substr(begin, end - begin);
}

std::string Trim(const std::string& s, const std::string& chars, bool left, bool right) {
  size_t a = 0, b = s.size();
  while (left && a < b && chars.find(s[a]) != std::string::npos) a++;
  while (right && b > a && chars.find(s[b - 1]) != std::string::npos) b--;
  return s.substr(a, b - a);
}

Result<Value> Double(double d, const char* fn) {
  if (std::isnan(d))
    return Status::Sql(sqlstate::kInvalidArgumentForPowerFunction,
                       fmt::format("invalid argument for {}", fn));
  return Value::Double(d);
}

// substring(s, start [, n]): 1-based start; characters before position 1 count against the
// length, as in PostgreSQL.
Result<Value> Substring(const std::string& s, const std::vector<Value>& args) {
  int64_t start = args[1].as_int();
  if (args.size() == 2) return Value::Text(Chars(s, std::max<int64_t>(start, 1) - 1, -1));
  int64_t n = args[2].as_int();
  if (n < 0) return Status::Sql(sqlstate::kSubstringError, "negative substring length not allowed");
  int64_t end = start + n;
  if (end <= 1) return Value::Text("");
  int64_t from = std::max<int64_t>(start, 1);
  return Value::Text(Chars(s, from - 1, end - from));
}

Result<Value> Pad(const std::string& s, const std::vector<Value>& args, bool left) {
  int64_t want = args[1].as_int(), len = static_cast<int64_t>(CharStarts(s).size());
  std::string fill = args.size() > 2 ? args[2].ToText() : " ";
  if (want <= len) return Value::Text(Chars(s, 0, std::max<int64_t>(want, 0)));
  if (fill.empty()) return Value::Text(s);
  if (want > (1 << 28))
    return Status::Sql(sqlstate::kProgramLimitExceeded, "requested length too large");
  std::string pad;
  auto fill_chars = CharStarts(fill);
  for (int64_t i = 0; i < want - len; i++)
    pad += Chars(fill, i % static_cast<int64_t>(fill_chars.size()), 1);
  return Value::Text(left ? pad + s : s + pad);
}

Result<Value> SplitPart(const std::string& s, const std::vector<Value>& args) {
  std::string delim = args[1].ToText();
  int64_t n = args[2].as_int();
  if (n == 0)
    return Status::Sql(sqlstate::kInvalidParameterValue, "field position must not be zero");
  std::vector<std::string> parts;
  if (delim.empty()) {
    parts.push_back(s);
  } else {
    size_t pos = 0;
    for (size_t at; (at = s.find(delim, pos)) != std::string::npos; pos = at + delim.size())
      parts.push_back(s.substr(pos, at - pos));
    parts.push_back(s.substr(pos));
  }
  int64_t idx = n > 0 ? n - 1 : static_cast<int64_t>(parts.size()) + n;
  return Value::Text(idx >= 0 && idx < static_cast<int64_t>(parts.size()) ? parts[idx] : "");
}

// chr(code): the character as UTF-8.
Result<Value> Chr(int64_t c) {
  if (c <= 0 || c > 0x10FFFF)
    return Status::Sql(sqlstate::kProgramLimitExceeded,
                       "requested character too large for encoding");
  std::string out;
  auto u = static_cast<uint32_t>(c);
  if (u < 0x80) {
    out += static_cast<char>(u);
  } else if (u < 0x800) {
    out += static_cast<char>(0xC0 | (u >> 6));
    out += static_cast<char>(0x80 | (u & 0x3F));
  } else if (u < 0x10000) {
    out += static_cast<char>(0xE0 | (u >> 12));
    out += static_cast<char>(0x80 | ((u >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (u & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (u >> 18));
    out += static_cast<char>(0x80 | ((u >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((u >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (u & 0x3F));
  }
  return Value::Text(std::move(out));
}

Value InitCap(const std::string& s) {
  std::string out = s;
  bool word = false;
  for (auto& c : out) {
    bool alnum = std::isalnum(static_cast<unsigned char>(c));
    c = static_cast<char>(word ? std::tolower(static_cast<unsigned char>(c))
                               : std::toupper(static_cast<unsigned char>(c)));
    word = alnum;
  }
  return Value::Text(std::move(out));
}

bool IsMathFunction(const std::string& name) {
  static const std::set<std::string> kNames = {"ceil",  "ceiling", "floor", "trunc", "sign",
                                               "sqrt",  "cbrt",    "exp",   "ln",    "log",
                                               "log10", "power",   "pow",   "mod"};
  return kNames.count(name) > 0;
}

// One of the functions IsMathFunction names, on non-NULL arguments.
Result<Value> CallMath(const std::string& name, const std::vector<Value>& args) {
  const Value& x = args[0];
  auto num = [&](Decimal (*f)(const Decimal&), double (*g)(double)) -> Value {
    return x.type() == TypeId::kNumeric ? Value::Numeric(f(x.as_decimal()))
                                        : Value::Double(g(x.as_double()));
  };
  if (name == "ceil" || name == "ceiling")
    return num(CeilDecimal, [](double d) { return std::ceil(d); });
  if (name == "floor") return num(FloorDecimal, [](double d) { return std::floor(d); });
  if (name == "trunc") {
    if (x.type() == TypeId::kNumeric) {
      ASSIGN_OR_RETURN(
          Decimal d,
          TruncDecimal(x.as_decimal(), args.size() > 1 ? static_cast<int>(args[1].as_int()) : 0));
      return Value::Numeric(d);
    }
    return Value::Double(std::trunc(x.as_double()));
  }
  if (name == "sign") {
    if (x.type() == TypeId::kNumeric)
      return Value::Numeric(Decimal{x.as_decimal().v > 0 ? 1 : x.as_decimal().v < 0 ? -1 : 0, 0});
    return Value::Double(x.as_double() > 0 ? 1 : x.as_double() < 0 ? -1 : 0);
  }
  if (name == "sqrt") {
    if (x.as_double() < 0)
      return Status::Sql(sqlstate::kInvalidArgumentForPowerFunction,
                         "cannot take square root of a negative number");
    return Value::Double(std::sqrt(x.as_double()));
  }
  if (name == "cbrt") return Value::Double(std::cbrt(x.as_double()));
  if (name == "exp") return Value::Double(std::exp(x.as_double()));
  if (name == "ln" || name == "log" || name == "log10") {
    if (x.as_double() == 0)
      return Status::Sql(sqlstate::kInvalidArgumentForLog, "cannot take logarithm of zero");
    if (x.as_double() < 0)
      return Status::Sql(sqlstate::kInvalidArgumentForLog,
                         "cannot take logarithm of a negative number");
    return Value::Double(name == "ln" ? std::log(x.as_double()) : std::log10(x.as_double()));
  }
  if (name == "power" || name == "pow") {
    double b = x.as_double(), e = args[1].as_double();
    if (b == 0 && e < 0)
      return Status::Sql(sqlstate::kInvalidArgumentForPowerFunction,
                         "zero raised to a negative power is undefined");
    if (b < 0 && e != std::floor(e)) {
      return Status::Sql(sqlstate::kInvalidArgumentForPowerFunction,
                         "a negative number raised to a non-integer power yields a complex result");
    }
    return Double(std::pow(b, e), "power");
  }
  if (name == "mod") {
    if (x.type() == TypeId::kNumeric) {
      ASSIGN_OR_RETURN(Decimal d, ModDecimal(x.as_decimal(), args[1].as_decimal()));
      return Value::Numeric(d);
    }
    if (args[1].as_int() == 0) return Status::Sql(sqlstate::kDivisionByZero, "division by zero");
    int64_t r = args[1].as_int() == -1 ? 0 : x.as_int() % args[1].as_int();
    return x.type() == TypeId::kInt32 ? Value::Int32(r) : Value::Int64(r);
  }
  return Status::Internal(fmt::format("{} is not a math function", name));
}

}  // namespace

Result<Value> CallBuiltin(const std::string& name, const std::vector<Value>& args) {
  if (name == "concat" || name == "concat_ws") {
    bool ws = name == "concat_ws";
    if (ws && args[0].is_null()) return Value();
    std::string out;
    bool first = true;
    for (size_t i = ws ? 1 : 0; i < args.size(); i++) {
      if (args[i].is_null()) continue;
      if (ws && !first) out += args[0].ToText();
      out += args[i].ToText();
      first = false;
    }
    return Value::Text(std::move(out));
  }
  if (name == "pi") return Value::Double(M_PI);
  if (name == "random") {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    return Value::Double(std::uniform_real_distribution<double>(0, 1)(rng));
  }
  for (const auto& a : args) {
    if (a.is_null()) return Value();
  }
  if (IsMathFunction(name)) return CallMath(name, args);
  const Value& x = args[0];
  const std::string s = x.ToText();
  if (name == "substring" || name == "substr") return Substring(s, args);
  if (name == "lpad" || name == "rpad") return Pad(s, args, name == "lpad");
  if (name == "split_part") return SplitPart(s, args);
  if (name == "chr") return Chr(x.as_int());
  if (name == "initcap") return InitCap(s);
  if (name == "strpos") {
    size_t at = s.find(args[1].ToText());
    if (at == std::string::npos) return Value::Int32(0);
    return Value::Int32(static_cast<int64_t>(CharStarts(s.substr(0, at)).size()) + 1);
  }
  if (name == "btrim" || name == "trim" || name == "ltrim" || name == "rtrim") {
    std::string chars = args.size() > 1 ? args[1].ToText() : " ";
    return Value::Text(Trim(s, chars, name != "rtrim", name != "ltrim"));
  }
  if (name == "replace") {
    std::string from = args[1].ToText(), to = args[2].ToText(), out;
    if (from.empty()) return Value::Text(s);
    size_t pos = 0;
    for (size_t at; (at = s.find(from, pos)) != std::string::npos; pos = at + from.size())
      out += s.substr(pos, at - pos) + to;
    return Value::Text(out + s.substr(pos));
  }
  if (name == "left" || name == "right") {
    int64_t len = static_cast<int64_t>(CharStarts(s).size()), n = args[1].as_int();
    int64_t keep = n >= 0 ? std::min(n, len) : std::max<int64_t>(0, len + n);
    return Value::Text(name == "left" ? Chars(s, 0, keep) : Chars(s, len - keep, keep));
  }
  if (name == "repeat") {
    std::string out;
    for (int64_t i = 0; i < args[1].as_int(); i++) {
      out += s;
      if (out.size() > (1u << 30))
        return Status::Sql(sqlstate::kProgramLimitExceeded, "requested length too large");
    }
    return Value::Text(std::move(out));
  }
  if (name == "reverse") {
    auto starts = CharStarts(s);
    std::string out;
    for (size_t i = starts.size(); i-- > 0;)
      out += s.substr(starts[i], (i + 1 < starts.size() ? starts[i + 1] : s.size()) - starts[i]);
    return Value::Text(std::move(out));
  }
  if (name == "ascii") return Value::Int32(s.empty() ? 0 : static_cast<unsigned char>(s[0]));
  if (name == "starts_with") return Value::Bool(s.rfind(args[1].ToText(), 0) == 0);
  if (name == "octet_length") return Value::Int32(static_cast<int64_t>(s.size()));
  return Status::Sql(sqlstate::kUndefinedFunction, fmt::format("function {} does not exist", name));
}

}  // namespace wattdb::exec
