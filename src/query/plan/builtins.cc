#include "query/plan/builtins.h"

#include <map>

namespace wattdb::plan {

namespace {

const SqlType kI{TypeId::kInt32}, kL{TypeId::kInt64}, kD{TypeId::kDouble}, kN{TypeId::kNumeric},
    kT{TypeId::kText}, kB{TypeId::kBool};

// Candidates in PostgreSQL's preference order for promoted arguments (double precision first).
const std::map<std::string, std::vector<BuiltinSig>>& Table() {
  static const std::map<std::string, std::vector<BuiltinSig>> table = {
      {"ceil", {{{kD}, kD}, {{kN}, kN}}},
      {"ceiling", {{{kD}, kD}, {{kN}, kN}}},
      {"floor", {{{kD}, kD}, {{kN}, kN}}},
      {"trunc", {{{kD}, kD}, {{kN}, kN}, {{kN, kI}, kN}}},
      {"sign", {{{kD}, kD}, {{kN}, kN}}},
      {"sqrt", {{{kD}, kD}}},
      {"cbrt", {{{kD}, kD}}},
      {"exp", {{{kD}, kD}}},
      {"ln", {{{kD}, kD}}},
      {"log", {{{kD}, kD}}},
      {"log10", {{{kD}, kD}}},
      {"power", {{{kD, kD}, kD}}},
      {"pow", {{{kD, kD}, kD}}},
      {"mod", {{{kI, kI}, kI}, {{kL, kL}, kL}, {{kN, kN}, kN}}},
      {"pi", {{{}, kD}}},
      {"random", {{{}, kD}}},
      {"substring", {{{kT, kI}, kT}, {{kT, kI, kI}, kT}}},
      {"substr", {{{kT, kI}, kT}, {{kT, kI, kI}, kT}}},
      {"strpos", {{{kT, kT}, kI}}},
      {"btrim", {{{kT}, kT}, {{kT, kT}, kT}}},
      {"trim", {{{kT}, kT}, {{kT, kT}, kT}}},
      {"ltrim", {{{kT}, kT}, {{kT, kT}, kT}}},
      {"rtrim", {{{kT}, kT}, {{kT, kT}, kT}}},
      {"replace", {{{kT, kT, kT}, kT}}},
      {"left", {{{kT, kI}, kT}}},
      {"right", {{{kT, kI}, kT}}},
      {"repeat", {{{kT, kI}, kT}}},
      {"reverse", {{{kT}, kT}}},
      {"lpad", {{{kT, kI}, kT}, {{kT, kI, kT}, kT}}},
      {"rpad", {{{kT, kI}, kT}, {{kT, kI, kT}, kT}}},
      {"split_part", {{{kT, kT, kI}, kT}}},
      {"chr", {{{kI}, kT}}},
      {"ascii", {{{kT}, kI}}},
      {"initcap", {{{kT}, kT}}},
      {"starts_with", {{{kT, kT}, kB}}},
      {"octet_length", {{{kT}, kI}}},
  };
  return table;
}

bool Promotes(TypeId from, TypeId to) {
  auto rank = [](TypeId t) {
    switch (t) {
      case TypeId::kInt32:
        return 1;
      case TypeId::kInt64:
        return 2;
      case TypeId::kNumeric:
        return 3;
      case TypeId::kDouble:
        return 4;
      default:
        return 0;
    }
  };
  return rank(from) && rank(to) && rank(from) <= rank(to);
}

}  // namespace

std::optional<BuiltinSig> ResolveBuiltin(const std::string& name, const std::vector<SqlType>& args,
                                         const std::vector<bool>& untyped) {
  auto it = Table().find(name);
  if (it == Table().end()) return std::nullopt;
  for (bool exact : {true, false}) {
    for (const auto& sig : it->second) {
      if (sig.params.size() != args.size()) continue;
      bool fits = true;
      for (size_t i = 0; i < args.size() && fits; i++) {
        TypeId a = args[i].id, p = sig.params[i].id;
        bool same = a == p || untyped[i] || a == TypeId::kNull ||
                    (a == TypeId::kInt32 && p == TypeId::kInt32);
        fits = same || (!exact && Promotes(a, p));
      }
      if (fits) return sig;
    }
  }
  return std::nullopt;
}

}  // namespace wattdb::plan
