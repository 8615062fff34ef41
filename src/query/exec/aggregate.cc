#include "query/exec/aggregate.h"

#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "common/bytes.h"
#include "common/codec.h"
#include "common/sqlstate.h"
#include "query/exec/agg_state.h"
#include "query/exec/eval.h"
#include "query/exec/eval_vector.h"
#include "query/exec/key_encoding.h"
#include "query/exec/key_index.h"
#include "query/exec/operator_base.h"
#include "query/exec/packed_ints.h"
#include "query/exec/row_hash.h"

namespace wattdb::exec {

using plan::AggFunc;
using plan::AggMode;
using plan::AggSpec;

namespace {

// Sums stay below 10^38 in magnitude (NUMERIC's 38 digits); beyond, AddDecimal reports 22003.
const Int128 kDecimalLimit = [] {
  Int128 p = 1;
  for (int i = 0; i < kMaxDecimalDigits; i++) p *= 10;
  return p;
}();

class HashAggregateOp : public UnaryOp {
 public:
  HashAggregateOp(const plan::PlanNode& p, std::unique_ptr<Operator> child)
      : UnaryOp(p, std::move(child)) {}

  Result<bool> Next(Batch& out) override {
    if (!built_) RETURN_NOT_OK(Build());
    out.Reset(p_.types.size());
    size_t ng = p_.groups.size();
    while (emit_ < groups_.size() && out.rows < kBatchRows) {
      const Group& grp = groups_[emit_++];
      for (size_t g = 0; g < ng; g++) out.cols[g].Append(keys_[grp.key + g]);
      for (size_t a = 0; a < p_.aggs.size(); a++) {
        if (p_.agg_mode == AggMode::kPartial) {
          out.cols[ng + a].Append(EncodeState(grp.states[a]));
        } else {
          ASSIGN_OR_RETURN(Value v, Finish(p_.aggs[a], grp.states[a]));
          out.cols[ng + a].Append(std::move(v));
        }
      }
      out.rows++;
    }
    return out.rows > 0;
  }

 private:
  struct Group {
    size_t key;        // its key's first value in keys_ (p_.groups.size() of them)
    AggState* states;  // p_.aggs.size() of them, in state_blocks_
  };

  Status Build() {
    built_ = true;
    size_t ng = p_.groups.size();
    std::vector<Vector> key_scratch(ng), args(p_.aggs.size());
    std::vector<const Vector*> keys(ng);
    std::vector<AggState*> row_states;
    Batch in;
    while (true) {
      RETURN_NOT_OK(CheckCancel(*ctx_));
      ASSIGN_OR_RETURN(bool more, child_->Next(in));
      if (!more) break;
      for (size_t g = 0; g < ng; g++) {
        ASSIGN_OR_RETURN(keys[g], EvalVectorRef(*p_.groups[g], in, ctx_, &key_scratch[g]));
      }
      // The group of each row: by an encoding of the typed key columns, or by boxed keys.
      AggState* all = nullptr;  // without GROUP BY: every row's
      if (ng == 0) {
        ASSIGN_OR_RETURN(all, FindGroup({}, nullptr));
      } else {
        RETURN_NOT_OK(RowGroups(keys, in.rows, &row_states));
      }
      bool all_rows = false;  // row_states holds `all` for every row of this batch
      for (size_t a = 0; a < p_.aggs.size(); a++) {
        const AggSpec& spec = p_.aggs[a];
        if (p_.agg_mode == AggMode::kFinal) {
          const Vector& st = in.cols[ng + a];
          for (size_t r = 0; r < in.rows; r++) {
            if (st.IsNull(r) || st.phys() != PhysType::kText)
              return Status::Corruption("aggregate state missing");
            RETURN_NOT_OK(MergeState(spec, st.texts()[r], all ? &all[a] : &row_states[r][a]));
          }
          continue;
        }
        if (spec.func == AggFunc::kCountStar) {
          if (all) {
            all[a].count += static_cast<int64_t>(in.rows);
          } else {
            for (size_t r = 0; r < in.rows; r++) row_states[r][a].count++;
          }
          continue;
        }
        ASSIGN_OR_RETURN(const Vector* arg, EvalVectorRef(*spec.arg, in, ctx_, &args[a]));
        if (all && UpdateOne(spec, all[a], *arg, in)) continue;
        if (all && !all_rows) {
          row_states.assign(in.rows, all);
          all_rows = true;
        }
        RETURN_NOT_OK(UpdateColumn(spec, a, *arg, in, row_states));
      }
    }
    if (ng == 0 && groups_.empty()) {  // an aggregate over no rows yields one row
      ASSIGN_OR_RETURN(auto* unused, FindGroup({}, nullptr));
      (void)unused;
    }
    return Status::OK();
  }

  // Each of the n rows' group (row_states), by an encoding of the typed key columns, or by
  // boxed keys; new groups are made.
  Status RowGroups(const std::vector<const Vector*>& keys, size_t n, std::vector<AggState*>* out) {
    const size_t ng = keys.size();
    std::vector<AggState*>& row_states = *out;
    row_states.resize(n);
    bool typed = !boxed_mode_ && TypedKeys(keys);
    if (!typed && !boxed_mode_) SwitchToBoxed();
    // One integer key (the types of every batch agree): by value; NULL keys by encoding.
    bool ints = typed && ng == 1 && keys[0]->phys() == PhysType::kInt;
    std::vector<Value> key;
    // Few distinct keys in the batch (flags, codes): each row's combination of small
    // per-column codes, and each combination's group looked up once (a lone integer key's
    // lookup is as cheap).
    size_t combos = typed && !ints ? BatchCodes(keys, n, &codes_) : 0;
    combo_states_.assign(combos, nullptr);
    const int64_t* int_keys = ints ? keys[0]->ints() : nullptr;
    constexpr size_t kAhead = 8;  // rows between a slot's prefetch and its lookup
    for (size_t r = 0; r < n; r++) {
      if (ints && !keys[0]->IsNull(r)) {
        if (r + kAhead < n) ints_.Prefetch(int_keys[r + kAhead]);
        int64_t k = int_keys[r];
        if (const uint32_t* idx = ints_.Find(k)) {
          row_states[r] = StatesOf(*idx);  // (not through groups_: one cache miss fewer)
          continue;
        }
        ints_.Insert(k, static_cast<uint32_t>(groups_.size()));
        Value v = keys[0]->GetValue(r);
        ASSIGN_OR_RETURN(row_states[r], NewGroup(&v, 1));
        continue;
      }
      AggState** known = combos ? &combo_states_[codes_[r]] : nullptr;
      if (known && *known) {
        row_states[r] = *known;
        continue;
      }
      if (!known && typed && !ints && r > 0 && SameKeys(keys, r - 1, r)) {  // a run of one key
        row_states[r] = row_states[r - 1];
        continue;
      }
      const uint32_t* idx = nullptr;
      if (typed) {
        enc_.clear();
        for (const Vector* k : keys) EncodeKeyPart(*k, r, &enc_);
        idx = encoded_.Find(enc_);
      }
      if (idx) {
        row_states[r] = groups_[*idx].states;
      } else {
        key.clear();
        for (size_t g = 0; g < ng; g++) key.push_back(keys[g]->GetValue(r));
        ASSIGN_OR_RETURN(row_states[r], FindGroup(std::move(key), typed ? &enc_ : nullptr));
      }
      if (known) *known = row_states[r];
    }
    return Status::OK();
  }

  // Adds argument column v of aggregate a to each row's group: count, sum and avg of typed
  // numbers in one loop each; everything else through Update.
  Status UpdateColumn(const AggSpec& spec, size_t a, const Vector& v, const Batch& in,
                      const std::vector<AggState*>& states) {
    size_t n = in.rows;
    bool summing = spec.func == AggFunc::kSum || spec.func == AggFunc::kAvg;
    bool simple = !spec.distinct && (summing || spec.func == AggFunc::kCount);
    if (!simple || v.phys() == PhysType::kBoxed || v.phys() == PhysType::kText) {
      for (size_t r = 0; r < n; r++) RETURN_NOT_OK(Update(spec, states[r][a], v, in, r));
      return Status::OK();
    }
    if (v.phys() == PhysType::kEmpty) return Status::OK();  // all NULL
    const uint8_t* nulls = v.nulls();
    if (!summing) {
      for (size_t r = 0; r < n; r++) states[r][a].count += !nulls[r];
      return Status::OK();
    }
    switch (v.phys()) {
      case PhysType::kDecimal: {
        const Decimal* d = v.decimals();
        for (size_t r = 0; r < n; r++) {
          if (r + 8 < n) __builtin_prefetch(&states[r + 8][a]);  // many groups: a miss each
          if (nulls[r]) continue;
          AggState& s = states[r][a];
          s.count++;
          Int128 t;
          if (s.nsum.scale == d[r].scale && !__builtin_add_overflow(s.nsum.v, d[r].v, &t) &&
              t < kDecimalLimit && t > -kDecimalLimit) {
            s.nsum.v = t;
          } else {
            ASSIGN_OR_RETURN(s.nsum, AddDecimal(s.nsum, d[r]));
          }
        }
        return Status::OK();
      }
      case PhysType::kDouble:
        ForEachValue(nulls, n, states, a,
                     [d = v.doubles()](AggState& s, size_t r) { s.dsum += d[r]; });
        return Status::OK();
      default:
        if (spec.type.id != TypeId::kDouble) {  // (the double sum is read only by a double result)
          ForEachValue(nulls, n, states, a,
                       [d = v.ints()](AggState& s, size_t r) { s.isum += d[r]; });
          return Status::OK();
        }
        ForEachValue(nulls, n, states, a, [d = v.ints()](AggState& s, size_t r) {
          s.isum += d[r];
          s.dsum += static_cast<double>(d[r]);
        });
        return Status::OK();
    }
  }

  // Adds argument column v to the one group's state s (no GROUP BY): counts, sums, minima and
  // maxima of integers and doubles in one loop each, running values in locals (the order of
  // the double additions and the value kept among equals as row by row). False for anything
  // else (UpdateColumn's to do), s untouched.
  bool UpdateOne(const AggSpec& spec, AggState& s, const Vector& v, const Batch& in) {
    const size_t n = in.rows;
    const bool minmax = spec.func == AggFunc::kMin || spec.func == AggFunc::kMax;
    const bool summing = spec.func == AggFunc::kSum || spec.func == AggFunc::kAvg;
    const bool ints = v.phys() == PhysType::kInt;
    if (spec.distinct || (!ints && v.phys() != PhysType::kDouble) ||
        !(minmax || summing || spec.func == AggFunc::kCount) ||
        (minmax && !s.best.is_null() && s.best.type() != v.value_type())) {
      return false;
    }
    const uint8_t* nulls = v.nulls();
    const bool no_nulls = !v.HasNulls();  // (a memchr: then every row counts, no row is skipped)
    const int64_t count = no_nulls ? static_cast<int64_t>(n) : CountNonNull(nulls, n);
    if (const PackedInts* p = v.packed();
        p && no_nulls && n == v.size() && n > 0 &&
        (minmax || (Narrow(v.value_type()) && spec.type.id != TypeId::kDouble))) {
      // Still packed (a received batch's column, a constant): base + entry per row, so the sum
      // and the extremes come from the entries, as they lie (wrapping as the sum below does).
      if (summing) {
        s.isum += static_cast<int64_t>(p->base * n + SumEntries(*p, n));
      } else if (minmax) {
        const bool min = spec.func == AggFunc::kMin;
        auto b = static_cast<int64_t>(p->base + (min ? MinEntry(*p, n) : MaxEntry(*p, n)));
        if (s.best.is_null() || (min ? b < s.best.as_int() : b > s.best.as_int()))
          s.best = IntValue(v.value_type(), b);
      }
      s.count += count;
      return true;
    }
    if (summing && ints) {
      // NULL rows' entries are zero: only the count needs them skipped. The double sum of
      // integers is kept only where the result reads it (a double precision sum).
      const int64_t* d = v.ints();
      if (Narrow(v.value_type()) && n <= kBatchRows) {
        // Values below 2^31 in magnitude: a batch's sum fits 64 bits, in a loop the compiler
        // vectorizes (a 128-bit sum carries from word to word). Unsigned: a column that breaks
        // its type's range (a corrupt peer's) sums to a wrong value, never to undefined behaviour.
        uint64_t sum = 0;
        for (size_t r = 0; r < n; r++) sum += static_cast<uint64_t>(d[r]);
        s.isum += static_cast<int64_t>(sum);
      } else {
        __int128 isum = 0;
        for (size_t r = 0; r < n; r++) isum += d[r];
        s.isum += isum;
      }
      if (spec.type.id == TypeId::kDouble) {
        double dsum = s.dsum;
        for (size_t r = 0; r < n; r++) dsum += nulls[r] ? 0.0 : static_cast<double>(d[r]);
        s.dsum = dsum;
      }
    } else if (summing) {
      const double* d = v.doubles();
      double dsum = s.dsum;
      for (size_t r = 0; r < n; r++) dsum += nulls[r] ? 0.0 : d[r];
      s.dsum = dsum;
    } else if (minmax) {
      const bool min = spec.func == AggFunc::kMin;
      size_t best = SIZE_MAX;  // the row that beat s.best (or set it), if one did
      if (ints) {
        // The batch's extreme in a loop without branches (a NULL row counts as the neutral
        // value), then one comparison with the state's.
        const int64_t* d = v.ints();
        int64_t b =
            min ? Extreme<true>(d, nulls, no_nulls, n) : Extreme<false>(d, nulls, no_nulls, n);
        if (count > 0 && (s.best.is_null() || (min ? b < s.best.as_int() : b > s.best.as_int()))) {
          s.best = IntValue(v.value_type(), b);
        }
      } else {
        const double* d = v.doubles();
        double b = s.best.is_null() ? 0 : s.best.as_double();
        for (size_t r = 0; r < n; r++) {
          if (nulls[r]) continue;
          if ((best == SIZE_MAX && s.best.is_null()) || CompareDoubles(d[r], b) == (min ? -1 : 1))
            b = d[best = r];
        }
      }
      if (best != SIZE_MAX) s.best = v.GetValue(best);
    }
    s.count += count;
    return true;
  }

  static bool Narrow(TypeId t) { return t == TypeId::kInt32 || t == TypeId::kBool; }

  static int64_t CountNonNull(const uint8_t* nulls, size_t n) {
    int64_t nulled = 0;
    for (size_t r = 0; r < n; r++) nulled += nulls[r];  // (NULL flags are 0 or 1)
    return static_cast<int64_t>(n) - nulled;
  }

  // The smallest (kMin) or largest value of d's non-NULL rows, the neutral value if none: four
  // running extremes, so that the comparisons of neighbouring rows overlap.
  template <bool kMin>
  static int64_t Extreme(const int64_t* d, const uint8_t* nulls, bool no_nulls, size_t n) {
    constexpr int64_t kNeutral = kMin ? INT64_MAX : INT64_MIN;
    auto pick = [](int64_t a, int64_t b) { return kMin ? (a < b ? a : b) : (a > b ? a : b); };
    int64_t b0 = kNeutral, b1 = kNeutral, b2 = kNeutral, b3 = kNeutral;
    size_t r = 0;
    if (no_nulls) {
      for (; r + 4 <= n; r += 4) {
        b0 = pick(b0, d[r]);
        b1 = pick(b1, d[r + 1]);
        b2 = pick(b2, d[r + 2]);
        b3 = pick(b3, d[r + 3]);
      }
      for (; r < n; r++) b0 = pick(b0, d[r]);
    } else {
      for (; r < n; r++) b0 = pick(b0, nulls[r] ? kNeutral : d[r]);
    }
    return pick(pick(b0, b1), pick(b2, b3));
  }

  // Counts each non-NULL row into its group's state of aggregate a and hands both to add.
  template <typename Add>
  static void ForEachValue(const uint8_t* nulls, size_t n, const std::vector<AggState*>& states,
                           size_t a, Add add) {
    for (size_t r = 0; r < n; r++) {
      if (r + 8 < n) __builtin_prefetch(&states[r + 8][a]);  // many groups: a miss each
      if (nulls[r]) continue;
      AggState& s = states[r][a];
      s.count++;
      add(s, r);
    }
  }

  // True if every key column is typed and of the physical type its earlier batches had.
  bool TypedKeys(const std::vector<const Vector*>& keys) {
    if (key_types_.empty()) key_types_.assign(keys.size(), {PhysType::kEmpty, TypeId::kNull});
    for (size_t g = 0; g < keys.size(); g++) {
      const Vector& k = *keys[g];
      if (k.phys() == PhysType::kBoxed) return false;
      if (k.phys() == PhysType::kEmpty) continue;
      auto& seen = key_types_[g];
      if (seen.first == PhysType::kEmpty) seen = {k.phys(), k.value_type()};
      if (seen.first != k.phys() || seen.second != k.value_type()) return false;
    }
    return true;
  }

  // Codes each row by the combination of its key columns' values when every column has at
  // most kBatchCodes distinct values (NULL one of them) in the batch, integers or texts, and
  // the columns' counts multiply to at most kBatchCombos: returns the number of combinations,
  // 0 if not coded.
  static constexpr size_t kBatchCodes = 16;
  static constexpr size_t kBatchCombos = 4096;
  static size_t BatchCodes(const std::vector<const Vector*>& keys, size_t n,
                           std::vector<uint32_t>* codes) {
    codes->assign(n, 0);
    size_t combos = 1;
    for (const Vector* k : keys) {
      const bool text = k->phys() == PhysType::kText;
      if (!text && k->phys() != PhysType::kInt && k->phys() != PhysType::kEmpty) return 0;
      if (const TextDictionary* d = text ? k->dictionary() : nullptr;
          d && d->values.size() < kBatchCodes && d->codes.size() >= n) {
        // The column's dictionary codes its rows already (distinct values, distinct codes).
        const uint8_t* code = d->codes.data();
        const uint8_t* null = k->nulls();
        for (size_t r = 0; r < n; r++)
          (*codes)[r] += static_cast<uint32_t>((null[r] ? 0 : code[r] + 1) * combos);
        combos *= d->values.size() + 1;
        if (combos > kBatchCombos) return 0;
        continue;
      }
      std::string_view texts[kBatchCodes];
      int64_t ints[kBatchCodes];
      size_t distinct = 1, hit = 0;  // code 0: NULL
      for (size_t r = 0; r < n; r++) {
        size_t code = 0;
        if (!k->IsNull(r)) {
          auto same = [&](size_t c) {
            if (!text) return ints[c] == k->ints()[r];
            const std::string_view t = k->texts()[r];
            if (texts[c].size() != t.size()) return false;
            if (texts[c].data() == t.data()) return true;  // shared bytes (repeats)
            if (t.size() > 8) return texts[c] == t;
            for (size_t i = 0; i < t.size(); i++) {  // flags and codes: no call
              if (texts[c][i] != t[i]) return false;
            }
            return true;
          };
          if (hit == 0 || !same(hit)) {
            for (hit = 1; hit < distinct && !same(hit); hit++) {
            }
            if (hit == distinct) {
              if (distinct == kBatchCodes) return 0;
              if (text) {
                texts[distinct++] = k->texts()[r];
              } else {
                ints[distinct++] = k->ints()[r];
              }
            }
          }
          code = hit;
        }
        (*codes)[r] += static_cast<uint32_t>(code * combos);
      }
      combos *= distinct;
      if (combos > kBatchCombos) return 0;
    }
    return combos;
  }

  // Whether rows a and b have the same key, judged cheaply: every key column NULL in both,
  // or the same integer, or texts of the same bytes (false for other types: not judged).
  static bool SameKeys(const std::vector<const Vector*>& keys, size_t a, size_t b) {
    for (const Vector* k : keys) {
      if (k->IsNull(a) || k->IsNull(b)) {
        if (k->IsNull(a) != k->IsNull(b)) return false;
        continue;
      }
      switch (k->phys()) {
        case PhysType::kInt:
          if (k->ints()[a] != k->ints()[b]) return false;
          break;
        case PhysType::kText:
          if (k->texts()[a] != k->texts()[b]) return false;
          break;
        default:
          return false;
      }
    }
    return true;
  }

  // Appends row r of key column v: equal keys (as grouping compares them, NULLs together)
  // encode equally.
  static void EncodeKeyPart(const Vector& v, size_t r, std::string* out) {
    if (v.IsNull(r)) {
      out->push_back('\0');
      return;
    }
    out->push_back('\1');
    PutKey(FamilyOf(v.value_type()), v, r, out);
  }

  // From now on every batch groups by boxed keys (a key column was boxed or changed type).
  void SwitchToBoxed() {
    boxed_mode_ = true;
    encoded_.Clear();
    ints_ = IntKeyIndex();
    size_t ng = p_.groups.size();
    for (size_t i = 0; i < groups_.size(); i++) {
      auto first = keys_.begin() + static_cast<std::ptrdiff_t>(groups_[i].key);
      boxed_.emplace(std::vector<Value>(first, first + static_cast<std::ptrdiff_t>(ng)), i);
    }
  }

  // The group of `key`, created if new; `enc` (typed keys) indexes it by its encoding.
  Result<AggState*> FindGroup(std::vector<Value> key, const std::string* enc) {
    if (key.empty()) {
      if (groups_.empty()) return NewGroup(nullptr, 0);
      return groups_[0].states;
    }
    if (!enc) {
      auto it = boxed_.find(key);
      if (it != boxed_.end()) return groups_[it->second].states;
    }
    size_t idx = groups_.size();
    if (enc) {
      encoded_.Insert(*enc, static_cast<uint32_t>(idx));
    } else {
      boxed_.emplace(key, idx);
    }
    return NewGroup(key.data(), key.size());
  }

  // Appends a group with key values key[0..n) (its caller indexes it). Keys go to one flat
  // array and states come from blocks of kBlockGroups groups: no allocation per group.
  Result<AggState*> NewGroup(Value* key, size_t n) {
    size_t bytes = p_.aggs.size() * sizeof(AggState) + sizeof(Group) + 16;
    for (size_t i = 0; i < n; i++) bytes += sizeof(Value) + key[i].HeapBytes();
    RETURN_NOT_OK(gauge_.Add(*ctx_, bytes));
    size_t na = p_.aggs.size();
    if (state_blocks_.empty() || block_used_ == kBlockGroups) {
      // Without GROUP BY, one group is all there will be (a partial aggregate per segment
      // made a whole block's states for it).
      size_t groups = p_.groups.empty() ? 1 : kBlockGroups;
      state_blocks_.push_back(std::make_unique<AggState[]>(groups * std::max<size_t>(na, 1)));
      block_used_ = 0;
    }
    AggState* states = state_blocks_.back().get() + block_used_++ * na;
    groups_.push_back({keys_.size(), states});
    for (size_t i = 0; i < n; i++) keys_.push_back(std::move(key[i]));
    return states;
  }

  // Group idx's states, found from its number alone (NewGroup fills blocks in order).
  AggState* StatesOf(size_t idx) const {
    return state_blocks_[idx / kBlockGroups].get() + (idx % kBlockGroups) * p_.aggs.size();
  }

  // Adds row r of argument column v.
  Status Update(const AggSpec& a, AggState& s, const Vector& v, const Batch& in, size_t r) {
    if (v.IsNull(r)) return Status::OK();
    if (a.distinct || a.func == AggFunc::kStringAgg || v.phys() == PhysType::kBoxed) {
      return UpdateValue(a, s, v.GetValue(r), in, r);
    }
    s.count++;
    switch (a.func) {
      case AggFunc::kSum:
      case AggFunc::kAvg:
        switch (v.phys()) {
          case PhysType::kDouble:
            s.dsum += v.doubles()[r];
            break;
          case PhysType::kDecimal: {
            ASSIGN_OR_RETURN(s.nsum, AddDecimal(s.nsum, v.decimals()[r]));
            break;
          }
          default:
            s.isum += v.ints()[r];
            s.dsum += static_cast<double>(v.ints()[r]);
        }
        break;
      case AggFunc::kMin:
      case AggFunc::kMax: {
        int want = a.func == AggFunc::kMin ? -1 : 1;
        if (s.best.is_null()) {
          s.best = v.GetValue(r);
          break;
        }
        int c = 0;
        bool same = s.best.type() == v.value_type();
        switch (v.phys()) {
          case PhysType::kInt:
            c = same ? (v.ints()[r] < s.best.as_int() ? -1 : v.ints()[r] > s.best.as_int())
                     : v.GetValue(r).Compare(s.best);
            break;
          case PhysType::kDouble:
            c = same ? CompareDoubles(v.doubles()[r], s.best.as_double())
                     : v.GetValue(r).Compare(s.best);
            break;
          case PhysType::kText:
            c = same ? v.texts()[r].compare(s.best.as_text()) : v.GetValue(r).Compare(s.best);
            c = c < 0 ? -1 : c > 0;
            break;
          default:
            c = v.GetValue(r).Compare(s.best);
        }
        if (c == want) s.best = v.GetValue(r);
        break;
      }
      default:  // count
        break;
    }
    return Status::OK();
  }

  Status UpdateValue(const AggSpec& a, AggState& s, Value v, const Batch& in, size_t r) {
    if (a.distinct) {
      if (!s.seen) s.seen = std::make_unique<std::unordered_set<Value, ValueHash, ValueEq>>();
      size_t bytes = sizeof(Value) + v.HeapBytes() + 32;
      if (!s.seen->insert(v).second) return Status::OK();
      RETURN_NOT_OK(gauge_.Add(*ctx_, bytes));
    }
    s.count++;
    switch (a.func) {
      case AggFunc::kSum:
      case AggFunc::kAvg:
        if (v.type() == TypeId::kDouble) {
          s.dsum += v.as_double();
        } else if (v.type() == TypeId::kNumeric) {
          ASSIGN_OR_RETURN(s.nsum, AddDecimal(s.nsum, v.as_decimal()));
        } else {
          s.isum += v.as_int();
          s.dsum += static_cast<double>(v.as_int());
        }
        break;
      case AggFunc::kStringAgg: {
        if (s.count > 1) {
          ASSIGN_OR_RETURN(Value sep, Eval(*a.separator, in, r, ctx_));
          if (!sep.is_null()) s.text += sep.ToText();
        }
        s.text += v.ToText();
        break;
      }
      case AggFunc::kMin:
        if (s.best.is_null() || v.Compare(s.best) < 0) s.best = std::move(v);
        break;
      case AggFunc::kMax:
        if (s.best.is_null() || v.Compare(s.best) > 0) s.best = std::move(v);
        break;
      default:
        break;
    }
    return Status::OK();
  }

  // The sum of a NUMERIC or integer argument as a decimal.
  static Decimal DecimalSum(const AggSpec& a, const AggState& s) {
    return a.arg->type.id == TypeId::kNumeric ? s.nsum : Decimal{s.isum, 0};
  }

  Result<Value> Finish(const AggSpec& a, const AggState& s) {
    switch (a.func) {
      case AggFunc::kCountStar:
      case AggFunc::kCount:
        return Value::Int64(s.count);
      case AggFunc::kSum:
        if (s.count == 0) return Value();
        if (a.type.id == TypeId::kDouble) return Value::Double(s.dsum);
        if (a.type.id == TypeId::kNumeric) return Value::Numeric(DecimalSum(a, s));
        if (s.isum > INT64_MAX || s.isum < INT64_MIN)
          return Status::Sql(sqlstate::kNumericValueOutOfRange, "bigint out of range");
        return Value::Int64(static_cast<int64_t>(s.isum));
      case AggFunc::kAvg:
        if (s.count == 0) return Value();
        if (a.type.id == TypeId::kNumeric) {
          ASSIGN_OR_RETURN(Decimal avg, DivDecimal(DecimalSum(a, s), DecimalFromInt(s.count)));
          return Value::Numeric(avg);
        }
        if (a.arg->type.IsInteger()) {
          return Value::Double(static_cast<double>(s.isum) / static_cast<double>(s.count));
        }
        return Value::Double(s.dsum / static_cast<double>(s.count));
      case AggFunc::kMin:
      case AggFunc::kMax:
        return s.best;
      case AggFunc::kStringAgg:
        return s.count ? Value::Text(s.text) : Value();
    }
    return Value();
  }

  bool built_ = false;
  MemoryGauge gauge_{"a hash aggregate"};
  std::vector<Group> groups_;  // in first-seen order (a Group is two words: moving it is cheap)
  std::vector<Value> keys_;    // the groups' keys, one after another
  static constexpr size_t kBlockGroups = 256;
  std::vector<std::unique_ptr<AggState[]>> state_blocks_;
  size_t block_used_ = 0;  // groups in the last block
  KeyIndex encoded_;       // encoded typed key -> index in groups_
  IntKeyIndex ints_;       // one integer key -> index in groups_ (its NULL group: in encoded_)
  std::string enc_;        // RowGroups' scratch: a row's encoded key,
  std::vector<uint32_t> codes_;          // ... the rows' codes (BatchCodes),
  std::vector<AggState*> combo_states_;  // ... and each code's group, once looked up
  std::unordered_map<std::vector<Value>, size_t, RowHash, RowEq> boxed_;  // boxed key -> index
  bool boxed_mode_ = false;
  std::vector<std::pair<PhysType, TypeId>> key_types_;  // of each key column, once seen
  size_t emit_ = 0;
};

}  // namespace

std::unique_ptr<Operator> MakeHashAggregate(const plan::PlanNode& p,
                                            std::unique_ptr<Operator> child) {
  return std::unique_ptr<Operator>(new HashAggregateOp(p, std::move(child)));
}

}  // namespace wattdb::exec
