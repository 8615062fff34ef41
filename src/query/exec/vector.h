// Vector: one column of a batch, stored by physical type so that operators can run tight
// loops over plain arrays:
//   kInt     int64_t   (BOOLEAN, INTEGER, BIGINT, TIMESTAMP)
//   kDouble  double    (DOUBLE PRECISION)
//   kDecimal Decimal   (NUMERIC)
//   kText    string_view into arenas the vector keeps alive (TEXT, VARCHAR, CHAR)
//   kBoxed   Value     (arrays, and any column whose values do not share one physical type)
// A vector holding only NULLs so far is kEmpty; the first non-NULL value fixes the physical
// type and the SQL type of the values (`value_type()`). Appending a value of another
// physical type turns the vector into kBoxed, so every column round-trips its Values
// exactly. Copies share the text bytes (cheap) read-only: text a copy appends goes to an arena
// of its own, so any number of threads may copy one vector that nobody changes (a column
// image); a vector is not thread-safe otherwise. A vector may also read such an unchanging
// vector's elements in place (Share): no copy until it is changed. A text vector made from a
// dictionary (InitFromDictionary: a received column batch's) lays its views out on the first
// read of them (texts(), GetValue, a copy's change): until then it is read by one thread at a
// time, and operators that work per value (dictionary()) never pay for the views.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/value.h"
#include "query/exec/packed_ints.h"

namespace wattdb::exec {

namespace internal {
// An allocator whose resize() leaves the new elements of a trivially copyable type unset
// (they are implicit-lifetime objects): Vector's arrays, whose every entry is written by
// whoever grows them (ResizeArray zeroes; InitUnset's callers write each).
template <typename T>
struct UnsetAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = UnsetAllocator<U>;
  };
  UnsetAllocator() = default;
  template <typename U>
  UnsetAllocator(const UnsetAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    if constexpr (!std::is_trivially_copyable_v<U>) ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
};
template <typename T>
using Array = std::vector<T, UnsetAllocator<T>>;
}  // namespace internal

enum class PhysType : uint8_t { kEmpty, kInt, kDouble, kDecimal, kText, kBoxed };

// What a text vector of few distinct values may also carry: non-NULL row i holds
// values[codes[i]] (the same bytes). Operators may work per value instead of per row.
struct TextDictionary {
  std::vector<std::string_view> values;  // distinct
  std::vector<uint8_t> codes;            // one per row (NULL rows: 0)
};

// The physical type values of SQL type `t` take in a vector.
PhysType PhysOf(TypeId t);
// The Value of an integer-like type (kBool, kInt32, kInt64, kTimestamp) held as int64.
Value IntValue(TypeId t, int64_t v);

// Owns the bytes of text values; chunks never move, so views into them stay valid.
class TextArena {
 public:
  TextArena() = default;
  // An arena that keeps `owner` (e.g. a received message whose bytes views point into) alive.
  explicit TextArena(std::shared_ptr<const void> owner) : owner_(std::move(owner)) {}
  std::string_view Copy(std::string_view s);

 private:
  std::vector<std::unique_ptr<char[]>> chunks_;
  size_t used_ = 0, cap_ = 0;
  std::shared_ptr<const void> owner_;
};

class Vector {
 public:
  Vector() = default;
  Vector(const Vector& o);
  Vector& operator=(const Vector& o);
  Vector(Vector&&) noexcept = default;
  Vector& operator=(Vector&&) noexcept = default;

  size_t size() const { return Src().null_.size(); }
  PhysType phys() const { return phys_; }
  TypeId value_type() const { return type_; }
  bool IsNull(size_t i) const { return Src().null_[i] != 0; }
  bool HasNulls() const;

  // Boxes element i. O(1) but allocates for text and arrays: hot loops use the arrays.
  Value GetValue(size_t i) const;

  void Clear();
  void Reserve(size_t n);
  // Drops the elements from n on. REQUIRES: n <= size().
  void Truncate(size_t n);
  void AppendNull();
  void AppendNulls(size_t n);
  void Append(const Value& v);
  void Append(Value&& v);
  // Appends src[i]. REQUIRES: &src != this.
  void AppendFrom(const Vector& src, size_t i);
  // Appends src[sel[0..n)] (a filter's survivors, a join's matches). REQUIRES: &src != this.
  void Gather(const Vector& src, const uint32_t* sel, size_t n);
  // Appends every element of src. REQUIRES: &src != this.
  void AppendAll(const Vector& src);

  // Typed appends (a value of another physical type boxes the vector, as Append does).
  void AppendInt(TypeId t, int64_t v) {
    if (phys_ == PhysType::kInt && type_ == t && !shared_ && !encoding_ && !ints_pending_) {
      null_.push_back(0);
      ints_.push_back(v);
      return;
    }
    AppendIntSlow(t, v);
  }
  void AppendDouble(double v) {
    if (phys_ == PhysType::kDouble && !shared_ && !encoding_) {
      null_.push_back(0);
      doubles_.push_back(v);
      return;
    }
    AppendDoubleSlow(v);
  }
  void AppendDecimal(const Decimal& v) {
    if (phys_ == PhysType::kDecimal && !shared_ && !encoding_) {
      null_.push_back(0);
      decimals_.push_back(v);
      return;
    }
    AppendDecimalSlow(v);
  }
  void AppendText(std::string_view v);  // copies the bytes into the vector's arena
  // Keeps `a` alive as long as this vector (or a copy) is: views into it may be appended.
  void KeepArena(std::shared_ptr<const TextArena> a);
  // Appends `v` without copying its bytes. REQUIRES: an arena this vector keeps holds them.
  void AppendTextView(std::string_view v) {
    if (phys_ == PhysType::kText && type_ == TypeId::kText && !shared_ && !dict_ && !encoding_) {
      null_.push_back(0);
      texts_.push_back(v);
      return;
    }
    AppendTextViewSlow(v);
  }

  // Makes this an all-non-NULL vector of n zeroes (empty texts) of type t (kInt, kDouble,
  // kDecimal or kText types) to be filled through the mutable arrays. Texts set there must lie
  // in arenas the vector keeps (KeepArena).
  void Init(TypeId t, size_t n);
  // Init without the zeroes: kInt, kDouble and kText entries are unset until written (other
  // types' are zeroed). REQUIRES: the caller writes every entry (a NULL row's zero / empty)
  // before anything reads them.
  void InitUnset(TypeId t, size_t n);
  int64_t* mutable_ints() { return Own().ints_.data(); }
  std::string_view* mutable_texts() { return Own().texts_.data(); }
  // Makes this a text vector of type t whose non-NULL row i holds d->values[d->codes[i]],
  // NULL where null[i] (empty: none); its views are laid out when first read. REQUIRES:
  // null empty or of d->codes.size(); codes below values.size(), 0 for NULL rows; the
  // values' bytes in `arena`, which the vector keeps.
  void InitFromDictionary(TypeId t, std::vector<uint8_t> null,
                          std::shared_ptr<const TextDictionary> d,
                          std::shared_ptr<const TextArena> arena);
  // Makes this an integer vector of type t holding `p`'s rows, NULL where null[i] (empty:
  // none); unpacked when first read. REQUIRES: null empty or of `rows` entries; p's entries
  // in `owner` (or none: width 0), which the vector keeps.
  void InitPacked(TypeId t, size_t rows, std::vector<uint8_t> null, PackedInts p,
                  std::shared_ptr<const TextArena> owner);
  // The rows as InitPacked made them while not yet unpacked (nullptr once they are, or if
  // never packed): operators may work on the entries instead. NULL rows' entries: see nulls().
  const PackedInts* packed() const {
    const Vector& s = Src();
    return s.ints_pending_ ? &s.packed_ : nullptr;
  }
  double* mutable_doubles() { return Own().doubles_.data(); }
  Decimal* mutable_decimals() { return Own().decimals_.data(); }
  uint8_t* mutable_nulls() { return Own().null_.data(); }

  // Reads src's elements in place until this vector is changed (which copies them first).
  // `no_nulls`: the caller knows src holds no NULL (HasNulls then reads none of its flags).
  // REQUIRES: nobody changes *src while it is shared; src is not this vector.
  void Share(std::shared_ptr<const Vector> src, bool no_nulls = false);
  bool shared() const { return shared_ != nullptr; }

  // The dictionary of a text vector's values, if one was attached (nullptr otherwise); any
  // change to the vector drops it. REQUIRES for Attach: d describes this vector's rows.
  const TextDictionary* dictionary() const { return Src().dict_.get(); }
  void AttachDictionary(std::shared_ptr<const TextDictionary> d) { dict_ = std::move(d); }
  // The vector's whole encoding as a column of a column batch (batch_codec.h), if one was
  // attached (an unchanging column image's); any change drops it. REQUIRES for Attach: the
  // encoding of this vector's rows.
  const std::string* encoding() const { return Src().encoding_.get(); }
  void AttachEncoding(std::shared_ptr<const std::string> e) { encoding_ = std::move(e); }

  // The arrays. REQUIRES: the matching phys(); entries of NULL rows are zero / empty.
  const int64_t* ints() const {
    const Vector& s = Src();
    if (s.ints_pending_) s.LayOutInts();
    return s.ints_.data();
  }
  const double* doubles() const { return Src().doubles_.data(); }
  const Decimal* decimals() const { return Src().decimals_.data(); }
  const std::string_view* texts() const {
    const Vector& s = Src();
    if (s.texts_pending_) s.LayOutTexts();
    return s.texts_.data();
  }
  const Value* boxed() const { return Src().boxed_.data(); }
  const uint8_t* nulls() const { return Src().null_.data(); }  // 1 = NULL

 private:
  // The vector whose arrays hold the elements: the shared one, or this.
  const Vector& Src() const { return shared_ ? *shared_ : *this; }
  // This vector, holding its elements in arrays of its own (copied from a shared vector).
  Vector& Own() {
    if (shared_) Unshare();
    if (texts_pending_) LayOutTexts();
    if (ints_pending_) LayOutInts();
    dict_.reset();
    encoding_.reset();
    return *this;
  }
  void Unshare();
  // Fills texts_ from dict_ (InitFromDictionary's views, made on first read).
  void LayOutTexts() const;
  // Fills ints_ from packed_ (InitPacked's rows, unpacked on first read).
  void LayOutInts() const;
  // Fixes the physical type on the first non-NULL value; boxes on a mismatch. Returns false
  // if the vector is (now) boxed.
  bool Prepare(TypeId t);
  void Box();
  // Sizes the array of phys() to n (new entries zero / empty / NULL Values; unless not
  // `zeroed`, where kInt, kDouble and kText entries are left unset).
  void ResizeArray(size_t n, bool zeroed = true);
  void InitArrays(TypeId t, size_t n, bool zeroed);
  void AppendIntSlow(TypeId t, int64_t v);
  void AppendDoubleSlow(double v);
  void AppendDecimalSlow(const Decimal& v);
  void AppendTextViewSlow(std::string_view v);
  TextArena& Arena();

  PhysType phys_ = PhysType::kEmpty;
  TypeId type_ = TypeId::kNull;
  std::vector<uint8_t> null_;
  mutable internal::Array<int64_t> ints_;  // unpacked late if ints_pending_
  mutable bool ints_pending_ = false;
  PackedInts packed_;
  internal::Array<double> doubles_;
  std::vector<Decimal> decimals_;
  mutable internal::Array<std::string_view> texts_;  // laid out late if texts_pending_
  mutable bool texts_pending_ = false;
  std::vector<Value> boxed_;
  std::shared_ptr<TextArena> arena_;                    // this vector's own text bytes
  std::vector<std::shared_ptr<const TextArena>> kept_;  // other vectors' arenas it points into
  std::shared_ptr<const Vector> shared_;                // set: the elements are its (arrays empty)
  bool shared_no_nulls_ = false;                        // with shared_: it holds no NULL (Share)
  std::shared_ptr<const TextDictionary> dict_;
  std::shared_ptr<const std::string> encoding_;
};

// The dictionary of text vector v's first n rows if they hold at most max_values (<= 256)
// distinct non-NULL values, and more than half of the first 16 repeat; nullptr otherwise.
std::shared_ptr<const TextDictionary> FindDictionary(const Vector& v, size_t n, size_t max_values);

}  // namespace wattdb::exec
