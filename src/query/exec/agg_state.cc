#include "query/exec/agg_state.h"

#include <cstring>
#include <vector>

#include "common/bytes.h"
#include "common/codec.h"

namespace wattdb::exec {

using plan::AggFunc;
using plan::AggSpec;

namespace {

// 128-bit integers as a varint when they fit in 64 bits (flag `wide` clear), else 16 bytes.
void PutI128(ByteWriter& w, __int128 v, bool wide) {
  if (!wide) {
    w.VarI64(static_cast<int64_t>(v));
    return;
  }
  auto u = static_cast<unsigned __int128>(v);
  w.U64(static_cast<uint64_t>(u));
  w.U64(static_cast<uint64_t>(u >> 64));
}

bool GetI128(ByteReader& r, bool wide, __int128* v) {
  if (!wide) {
    int64_t i;
    if (!r.VarI64(&i)) return false;
    *v = i;
    return true;
  }
  uint64_t lo, hi;
  if (!r.U64(&lo) || !r.U64(&hi)) return false;
  *v = static_cast<__int128>((static_cast<unsigned __int128>(hi) << 64) | lo);
  return true;
}

bool Fits64(__int128 v) { return v >= INT64_MIN && v <= INT64_MAX; }

enum StateFlags : uint8_t {
  kHasCount = 1,
  kHasIsum = 2,
  kWideIsum = 4,
  kHasDsum = 8,
  kHasNsum = 16,
  kWideNsum = 32,
  kHasBest = 64,
};

}  // namespace

Value EncodeState(const AggState& s) {
  uint8_t flags = (s.count ? kHasCount : 0) |
                  (s.isum ? kHasIsum | (Fits64(s.isum) ? 0 : kWideIsum) : 0) |
                  (s.dsum != 0 ? kHasDsum : 0) |
                  (s.nsum.v || s.nsum.scale ? kHasNsum | (Fits64(s.nsum.v) ? 0 : kWideNsum) : 0) |
                  (s.best.is_null() ? 0 : kHasBest);
  std::string out;
  ByteWriter w(&out);
  w.U8(flags);
  if (flags & kHasCount) w.VarI64(s.count);
  if (flags & kHasIsum) PutI128(w, s.isum, flags & kWideIsum);
  if (flags & kHasDsum) {
    uint64_t bits;
    std::memcpy(&bits, &s.dsum, 8);
    w.U64(bits);
  }
  if (flags & kHasNsum) {
    w.U8(static_cast<uint8_t>(s.nsum.scale));
    PutI128(w, s.nsum.v, flags & kWideNsum);
  }
  if (flags & kHasBest) {
    std::string best;
    EncodeRow({s.best}, &best);
    w.Str(best);
  }
  return Value::Text(std::move(out));
}

Status MergeState(const AggSpec& a, std::string_view in, AggState* s) {
  auto bad = [] { return Status::Corruption("aggregate state does not decode"); };
  ByteReader r(in);
  uint8_t flags;
  int64_t count = 0;
  __int128 isum = 0;
  uint64_t bits = 0;
  uint8_t scale = 0;
  Decimal nsum;
  if (!r.U8(&flags) || flags >= 128) return bad();
  if ((flags & kHasCount) && !r.VarI64(&count)) return bad();
  if ((flags & kHasIsum) && !GetI128(r, flags & kWideIsum, &isum)) return bad();
  if ((flags & kHasDsum) && !r.U64(&bits)) return bad();
  if ((flags & kHasNsum) &&
      (!r.U8(&scale) || scale > kMaxDecimalScale || !GetI128(r, flags & kWideNsum, &nsum.v))) {
    return bad();
  }
  std::vector<Value> best;
  if (flags & kHasBest) {
    std::string_view best_enc;
    if (!r.Str(&best_enc) || !DecodeRow(best_enc, &best).ok() || best.size() != 1) return bad();
  }
  if (!r.empty()) return bad();
  nsum.scale = scale;
  double dsum;
  std::memcpy(&dsum, &bits, 8);
  s->count += count;
  s->isum += isum;
  s->dsum += dsum;
  if (count > 0 && (a.func == AggFunc::kSum || a.func == AggFunc::kAvg)) {
    ASSIGN_OR_RETURN(s->nsum, AddDecimal(s->nsum, nsum));
  }
  if (!best.empty() && !best[0].is_null()) {
    const Value& b = best[0];
    int want = a.func == AggFunc::kMin ? -1 : 1;
    if (s->best.is_null() || (b.Compare(s->best) > 0 ? 1 : -1) == want) s->best = b;
  }
  return Status::OK();
}

}  // namespace wattdb::exec
