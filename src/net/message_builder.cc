#include "net/message_builder.h"

#include <cstdlib>
#include <memory>
#include <new>

namespace wattdb::net::internal {

namespace {

// The thread's kept segments (allocated zeroed on first use; zeroed again by each builder
// that used one) and which are lent.
struct Keep {
  capnp::word* segments[ScratchSegment::kKept] = {};
  unsigned lent = 0;  // bit i: segments[i] is lent
  ~Keep() {
    for (capnp::word* s : segments) std::free(s);
  }
};

thread_local Keep tl_keep;

capnp::word* ZeroedSegment() {
  void* p = std::calloc(ScratchSegment::kWords, sizeof(capnp::word));
  if (!p) throw std::bad_alloc();
  return static_cast<capnp::word*>(p);
}

}  // namespace

ScratchSegment::ScratchSegment() : words_(nullptr), slot_(-1) {
  Keep& keep = tl_keep;
  for (int i = 0; i < kKept; i++) {
    if (keep.lent & (1u << i)) continue;
    if (!keep.segments[i]) keep.segments[i] = ZeroedSegment();
    keep.lent |= 1u << i;
    words_ = keep.segments[i];
    slot_ = i;
    return;
  }
  words_ = ZeroedSegment();
}

ScratchSegment::~ScratchSegment() {
  if (slot_ < 0) {
    std::free(words_);
    return;
  }
  tl_keep.lent &= ~(1u << slot_);
}

}  // namespace wattdb::net::internal
