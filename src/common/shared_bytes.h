// SharedBytes: an immutable byte string whose copies share one buffer (a reference count in
// front of the bytes, one allocation). Made once, read by many: a copy costs an atomic
// increment instead of an allocation and a memcpy, and the bytes live as long as any copy.
//
// Thread-safe as a std::shared_ptr is: copies may be made, read and dropped on any threads;
// one object is not written from two threads at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <utility>

namespace wattdb {

class SharedBytes {
 public:
  SharedBytes() = default;
  explicit SharedBytes(std::string_view bytes) {
    if (bytes.empty()) return;
    rep_ = static_cast<Rep*>(::operator new(sizeof(Rep) + bytes.size()));
    new (rep_) Rep{{1}, bytes.size()};
    std::memcpy(rep_->data(), bytes.data(), bytes.size());
  }
  SharedBytes(const SharedBytes& o) : rep_(o.rep_) {
    if (rep_) rep_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  SharedBytes(SharedBytes&& o) noexcept : rep_(std::exchange(o.rep_, nullptr)) {}
  SharedBytes& operator=(SharedBytes o) noexcept {
    std::swap(rep_, o.rep_);
    return *this;
  }
  ~SharedBytes() {
    if (rep_ && rep_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      rep_->~Rep();
      ::operator delete(rep_);
    }
  }

  std::string_view view() const {
    return rep_ ? std::string_view(rep_->data(), rep_->size) : std::string_view();
  }
  operator std::string_view() const { return view(); }  // NOLINT: reads like the bytes
  size_t size() const { return rep_ ? rep_->size : 0; }
  bool empty() const { return size() == 0; }
  std::string ToString() const { return std::string(view()); }

 private:
  struct Rep {
    std::atomic<uint32_t> refs;
    size_t size;
    char* data() { return reinterpret_cast<char*>(this + 1); }
  };
  Rep* rep_ = nullptr;
};

}  // namespace wattdb
