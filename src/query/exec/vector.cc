#include "query/exec/vector.h"

#include <algorithm>
#include <cstring>

namespace wattdb::exec {

PhysType PhysOf(TypeId t) {
  switch (t) {
    case TypeId::kBool:
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kTimestamp:
      return PhysType::kInt;
    case TypeId::kDouble:
      return PhysType::kDouble;
    case TypeId::kNumeric:
      return PhysType::kDecimal;
    case TypeId::kText:
      return PhysType::kText;
    case TypeId::kNull:
      return PhysType::kEmpty;
    case TypeId::kArray:
      break;
  }
  return PhysType::kBoxed;
}

Value IntValue(TypeId t, int64_t v) {
  switch (t) {
    case TypeId::kBool:
      return Value::Bool(v != 0);
    case TypeId::kInt32:
      return Value::Int32(v);
    case TypeId::kTimestamp:
      return Value::Timestamp(v);
    default:
      return Value::Int64(v);
  }
}

std::string_view TextArena::Copy(std::string_view s) {
  if (s.empty()) return {};
  if (used_ + s.size() > cap_) {
    cap_ = std::max<size_t>(64 << 10, s.size());
    chunks_.emplace_back(new char[cap_]);
    used_ = 0;
  }
  char* p = chunks_.back().get() + used_;
  memcpy(p, s.data(), s.size());
  used_ += s.size();
  return {p, s.size()};
}

bool Vector::HasNulls() const {
  if (shared_ && shared_no_nulls_) return false;
  const auto& null = Src().null_;
  return !null.empty() && std::memchr(null.data(), 1, null.size()) != nullptr;
}

Value Vector::GetValue(size_t i) const {
  const Vector& s = Src();
  if (s.null_[i]) return Value();
  switch (phys_) {
    case PhysType::kInt:
      if (s.ints_pending_) {
        return IntValue(
            type_, static_cast<int64_t>(s.packed_.base + EntryAt(s.packed_, s.null_.size(), i)));
      }
      return IntValue(type_, s.ints_[i]);
    case PhysType::kDouble:
      return Value::Double(s.doubles_[i]);
    case PhysType::kDecimal:
      return Value::Numeric(s.decimals_[i]);
    case PhysType::kText:
      if (s.texts_pending_ && s.dict_)
        return Value::Text(std::string(s.dict_->values[s.dict_->codes[i]]));
      return Value::Text(std::string(s.texts_[i]));
    case PhysType::kBoxed:
      return s.boxed_[i];
    case PhysType::kEmpty:
      break;
  }
  return Value();
}

void Vector::Clear() {
  phys_ = PhysType::kEmpty;
  type_ = TypeId::kNull;
  null_.clear();
  ints_.clear();
  doubles_.clear();
  decimals_.clear();
  texts_.clear();
  texts_pending_ = false;
  ints_pending_ = false;
  boxed_.clear();
  arena_.reset();
  kept_.clear();
  shared_.reset();
  dict_.reset();
  encoding_.reset();
}

void Vector::Share(std::shared_ptr<const Vector> src, bool no_nulls) {
  if (src->shared_) {
    no_nulls = no_nulls || src->shared_no_nulls_;
    src = src->shared_;
  }
  if (src->texts_pending_) src->LayOutTexts();  // its readers then only read
  if (src->ints_pending_) src->LayOutInts();
  Clear();
  phys_ = src->phys_;
  type_ = src->type_;
  shared_ = std::move(src);
  shared_no_nulls_ = no_nulls;
}

void Vector::Unshare() {
  std::shared_ptr<const Vector> src = std::move(shared_);
  shared_.reset();
  *this = Vector(*src);  // src shares nothing (Share follows a chain): a copy of its arrays
}

void Vector::InitFromDictionary(TypeId t, std::vector<uint8_t> null,
                                std::shared_ptr<const TextDictionary> d,
                                std::shared_ptr<const TextArena> arena) {
  Clear();
  if (arena) kept_.push_back(std::move(arena));
  if (null.empty()) null.assign(d->codes.size(), 0);
  null_ = std::move(null);
  phys_ = PhysType::kText;
  type_ = t;
  dict_ = std::move(d);
  texts_pending_ = true;
}

void Vector::InitPacked(TypeId t, size_t rows, std::vector<uint8_t> null, PackedInts p,
                        std::shared_ptr<const TextArena> owner) {
  Clear();
  if (owner) kept_.push_back(std::move(owner));
  if (null.empty()) null.assign(rows, 0);
  null_ = std::move(null);
  phys_ = PhysType::kInt;
  type_ = t;
  packed_ = p;
  ints_pending_ = true;
}

void Vector::LayOutInts() const {
  ints_pending_ = false;
  size_t n = null_.size();
  ints_.resize(n);  // unset: every entry written below
  UnpackInts(packed_, n, ints_.data());
  const uint8_t* null = null_.data();
  if (std::memchr(null, 1, n) != nullptr) {
    for (size_t i = 0; i < n; i++) ints_[i] = null[i] ? 0 : ints_[i];
  }
}

void Vector::LayOutTexts() const {
  texts_pending_ = false;
  if (!dict_) return;  // moved from
  size_t n = null_.size();
  texts_.resize(n);  // unset: every entry written below
  std::string_view* __restrict out = texts_.data();
  const uint8_t* __restrict code = dict_->codes.data();
  // Each view as two words, from the values' pointers and lengths in locals (a view copied
  // whole went through the stack, row by row).
  const char* data[256] = {};  // (no values: every row is NULL, an empty view)
  size_t len[256] = {};
  size_t nv = std::min<size_t>(dict_->values.size(), 256);
  for (size_t d = 0; d < nv; d++) {
    data[d] = dict_->values[d].data();
    len[d] = dict_->values[d].size();
  }
  for (size_t i = 0; i < n; i++) out[i] = std::string_view(data[code[i]], len[code[i]]);
  const uint8_t* null = null_.data();
  if (std::memchr(null, 1, n) != nullptr) {
    for (size_t i = 0; i < n; i++) {
      if (null[i]) out[i] = std::string_view();
    }
  }
}

void Vector::Truncate(size_t n) {
  Own();
  null_.resize(n);
  ResizeArray(n);
}

void Vector::Init(TypeId t, size_t n) { InitArrays(t, n, /*zeroed=*/true); }

void Vector::InitUnset(TypeId t, size_t n) { InitArrays(t, n, /*zeroed=*/false); }

void Vector::InitArrays(TypeId t, size_t n, bool zeroed) {
  Clear();
  null_.assign(n, 0);
  phys_ = PhysOf(t);
  type_ = t;
  if (phys_ == PhysType::kInt || phys_ == PhysType::kDouble || phys_ == PhysType::kDecimal ||
      phys_ == PhysType::kText) {
    ResizeArray(n, zeroed);
    return;
  }
  phys_ = PhysType::kBoxed;  // not for boxed values
  null_.assign(n, 1);
  ResizeArray(n);
}

namespace {
// Resizes `a`, new entries zero (an internal::Array leaves them unset otherwise).
template <typename A>
void ResizeZeroed(A& a, size_t n) {
  size_t old = a.size();
  a.resize(n);
  if (n > old) std::fill(a.begin() + old, a.end(), typename A::value_type{});
}
}  // namespace

void Vector::ResizeArray(size_t n, bool zeroed) {
  switch (phys_) {
    case PhysType::kInt:
      zeroed ? ResizeZeroed(ints_, n) : ints_.resize(n);
      break;
    case PhysType::kDouble:
      zeroed ? ResizeZeroed(doubles_, n) : doubles_.resize(n);
      break;
    case PhysType::kDecimal:
      decimals_.resize(n);
      break;
    case PhysType::kText:
      zeroed ? ResizeZeroed(texts_, n) : texts_.resize(n);
      break;
    case PhysType::kBoxed:
      boxed_.resize(n);
      break;
    case PhysType::kEmpty:
      break;
  }
}

void Vector::Reserve(size_t n) {
  Own();
  null_.reserve(n);
  switch (phys_) {
    case PhysType::kInt:
      ints_.reserve(n);
      break;
    case PhysType::kDouble:
      doubles_.reserve(n);
      break;
    case PhysType::kDecimal:
      decimals_.reserve(n);
      break;
    case PhysType::kText:
      texts_.reserve(n);
      break;
    case PhysType::kBoxed:
      boxed_.reserve(n);
      break;
    case PhysType::kEmpty:
      break;
  }
}

bool Vector::Prepare(TypeId t) {
  if (phys_ == PhysType::kBoxed) return false;
  PhysType p = PhysOf(t);
  if (phys_ == PhysType::kEmpty && p != PhysType::kBoxed && p != PhysType::kEmpty) {
    phys_ = p;
    type_ = t;
    ResizeArray(null_.size());  // the NULLs so far
    return true;
  }
  if (p == phys_ && t == type_) return true;
  Box();
  return false;
}

void Vector::Box() {
  if (phys_ == PhysType::kBoxed) return;
  std::vector<Value> vals;
  vals.reserve(null_.size());
  for (size_t i = 0; i < null_.size(); i++) vals.push_back(GetValue(i));
  ints_.clear();
  doubles_.clear();
  decimals_.clear();
  texts_.clear();
  texts_pending_ = false;
  ints_pending_ = false;
  dict_.reset();
  arena_.reset();
  kept_.clear();
  boxed_ = std::move(vals);
  phys_ = PhysType::kBoxed;
}

Vector::Vector(const Vector& o)
    : phys_(o.phys_),
      type_(o.type_),
      null_(o.null_),
      ints_(o.ints_),
      ints_pending_(o.ints_pending_),
      packed_(o.packed_),
      doubles_(o.doubles_),
      decimals_(o.decimals_),
      texts_(o.texts_),
      texts_pending_(o.texts_pending_),
      boxed_(o.boxed_),
      kept_(o.kept_),
      shared_(o.shared_),
      shared_no_nulls_(o.shared_no_nulls_),
      dict_(o.dict_),
      encoding_(o.encoding_) {
  if (o.arena_) kept_.push_back(o.arena_);
}

Vector& Vector::operator=(const Vector& o) {
  if (this != &o) *this = Vector(o);
  return *this;
}

TextArena& Vector::Arena() {
  if (!arena_) arena_ = std::make_shared<TextArena>();
  return *arena_;
}

void Vector::AppendNull() { AppendNulls(1); }

void Vector::AppendNulls(size_t n) {
  Own();
  null_.resize(null_.size() + n, 1);
  ResizeArray(null_.size());
}

void Vector::Append(const Value& v) {
  if (v.is_null()) return AppendNull();
  Own();
  if (!Prepare(v.type())) {
    boxed_.push_back(v);
    null_.push_back(0);
    return;
  }
  null_.push_back(0);
  switch (phys_) {
    case PhysType::kInt:
      ints_.push_back(v.as_int());
      break;
    case PhysType::kDouble:
      doubles_.push_back(v.as_double());
      break;
    case PhysType::kDecimal:
      decimals_.push_back(v.as_decimal());
      break;
    case PhysType::kText:
      texts_.push_back(Arena().Copy(v.as_text()));
      break;
    default:
      break;
  }
}

void Vector::Append(Value&& v) {
  Own();
  if (!v.is_null() && !Prepare(v.type())) {
    boxed_.push_back(std::move(v));
    null_.push_back(0);
    return;
  }
  Append(static_cast<const Value&>(v));
}

void Vector::AppendIntSlow(TypeId t, int64_t v) {
  Own();
  if (!Prepare(t)) return Append(IntValue(t, v));
  null_.push_back(0);
  ints_.push_back(v);
}

void Vector::AppendDoubleSlow(double v) {
  Own();
  if (!Prepare(TypeId::kDouble)) return Append(Value::Double(v));
  null_.push_back(0);
  doubles_.push_back(v);
}

void Vector::AppendDecimalSlow(const Decimal& v) {
  Own();
  if (!Prepare(TypeId::kNumeric)) return Append(Value::Numeric(v));
  null_.push_back(0);
  decimals_.push_back(v);
}

void Vector::AppendText(std::string_view v) {
  Own();
  if (!Prepare(TypeId::kText)) return Append(Value::Text(std::string(v)));
  // A value equal to the one before shares its bytes: a column of repeats costs its views.
  bool repeat = !texts_.empty() && !null_.back() && texts_.back() == v;
  texts_.push_back(repeat ? texts_.back() : Arena().Copy(v));
  null_.push_back(0);
}

void Vector::KeepArena(std::shared_ptr<const TextArena> a) {
  Own();
  if (a && a != arena_ && std::find(kept_.begin(), kept_.end(), a) == kept_.end())
    kept_.push_back(std::move(a));
}

void Vector::AppendTextViewSlow(std::string_view v) {
  Own();
  if (!Prepare(TypeId::kText)) return Append(Value::Text(std::string(v)));
  null_.push_back(0);
  texts_.push_back(v);
}

void Vector::AppendFrom(const Vector& from, size_t i) {
  const Vector& src = from.Src();
  if (src.null_[i]) return AppendNull();
  Own();
  if (src.phys_ == PhysType::kBoxed || !Prepare(src.type_)) return Append(src.GetValue(i));
  null_.push_back(0);
  switch (phys_) {
    case PhysType::kInt:
      ints_.push_back(src.ints()[i]);
      break;
    case PhysType::kDouble:
      doubles_.push_back(src.doubles_[i]);
      break;
    case PhysType::kDecimal:
      decimals_.push_back(src.decimals_[i]);
      break;
    case PhysType::kText:
      texts_.push_back(Arena().Copy(src.texts()[i]));
      break;
    default:
      break;
  }
}

void Vector::Gather(const Vector& from, const uint32_t* sel, size_t n) {
  if (n == 0) return;
  const Vector& src = from.Src();
  Own();
  if (src.phys_ == PhysType::kEmpty) return AppendNulls(n);  // NULLs only
  bool typed = src.phys_ != PhysType::kBoxed && src.phys_ != PhysType::kEmpty &&
               (phys_ == PhysType::kEmpty || (phys_ == src.phys_ && type_ == src.type_));
  if (!typed) {
    for (size_t k = 0; k < n; k++) AppendFrom(src, sel[k]);
    return;
  }
  Prepare(src.type_);
  size_t base = null_.size();
  null_.resize(base + n);
  for (size_t k = 0; k < n; k++) null_[base + k] = src.null_[sel[k]];
  switch (phys_) {
    case PhysType::kInt: {
      const int64_t* from_ints = src.ints();
      ints_.resize(base + n);
      for (size_t k = 0; k < n; k++) ints_[base + k] = from_ints[sel[k]];
      break;
    }
    case PhysType::kDouble:
      doubles_.resize(base + n);
      for (size_t k = 0; k < n; k++) doubles_[base + k] = src.doubles_[sel[k]];
      break;
    case PhysType::kDecimal:
      decimals_.resize(base + n);
      for (size_t k = 0; k < n; k++) decimals_[base + k] = src.decimals_[sel[k]];
      break;
    case PhysType::kText: {
      // Views into src's arenas: keep those alive instead of copying the bytes.
      auto keep = [&](const std::shared_ptr<const TextArena>& a) {
        if (a && a != arena_ && std::find(kept_.begin(), kept_.end(), a) == kept_.end())
          kept_.push_back(a);
      };
      keep(src.arena_);
      for (const auto& a : src.kept_) keep(a);
      const std::string_view* from_texts = src.texts();
      texts_.resize(base + n);
      for (size_t k = 0; k < n; k++) texts_[base + k] = from_texts[sel[k]];
      break;
    }
    default:
      break;
  }
}

void Vector::AppendAll(const Vector& src) {
  size_t n = src.size();
  if (n == 0) return;
  std::vector<uint32_t> sel(n);
  for (size_t i = 0; i < n; i++) sel[i] = static_cast<uint32_t>(i);
  Gather(src, sel.data(), n);
}

std::shared_ptr<const TextDictionary> FindDictionary(const Vector& v, size_t n, size_t max_values) {
  if (v.phys() != PhysType::kText || n < 2) return nullptr;
  auto d = std::make_shared<TextDictionary>();
  d->codes.assign(n, 0);
  const std::string_view* t = v.texts();
  const uint8_t* null = v.nulls();
  size_t seen = 0, hit = 0;
  for (size_t i = 0; i < n; i++) {
    if (null[i]) continue;
    if (++seen == 17 && d->values.size() > 8) return nullptr;
    // The last value met first; shared bytes (repeats in a column image) without comparing.
    auto& vals = d->values;
    if (vals.empty() || (vals[hit].data() != t[i].data() && vals[hit] != t[i])) {
      hit = 0;
      while (hit < vals.size() && vals[hit] != t[i]) hit++;
      if (hit == vals.size()) {
        if (hit == max_values) return nullptr;
        vals.push_back(t[i]);
      }
    }
    d->codes[i] = static_cast<uint8_t>(hit);
  }
  return d;
}

}  // namespace wattdb::exec
