// MessageBuilder: a Cap'n Proto message builder whose first segment is memory its thread
// keeps from one message to the next, instead of a fresh zeroed allocation per message.
// A request or reply of a few hundred bytes then costs no allocation and zeroes only what
// it used (capnp::MallocMessageBuilder writes zeros over the used part of a borrowed first
// segment when it is destroyed); a message larger than the kept segment goes on in segments
// of its own, as any MallocMessageBuilder's.
//
// A thread keeps a few such segments, so builders may nest (a request being built while
// another's reply is built, as in a node served in the caller's thread); a builder made
// while all of them are lent gets a segment of its own. A builder must be destroyed on the
// thread that made it (every one lives on a stack).
#pragma once

#include <cstddef>

#include <capnp/message.h>

namespace wattdb::net {

namespace internal {

// A zeroed first segment lent by the thread's keep, or owned if the keep had none free.
class ScratchSegment {
 public:
  static constexpr size_t kWords = 1024;  // capnp's suggested first segment: 8 KB
  static constexpr int kKept = 4;         // per thread

  ScratchSegment();
  ~ScratchSegment();
  ScratchSegment(const ScratchSegment&) = delete;
  ScratchSegment& operator=(const ScratchSegment&) = delete;

  kj::ArrayPtr<capnp::word> words() const { return {words_, kWords}; }
  bool lent() const { return slot_ >= 0; }  // (for tests)

 private:
  capnp::word* words_;
  int slot_;  // in the thread's keep; -1: owned
};

}  // namespace internal

class MessageBuilder : private internal::ScratchSegment, public capnp::MallocMessageBuilder {
 public:
  MessageBuilder() : internal::ScratchSegment(), capnp::MallocMessageBuilder(words()) {}
  // Bases are destroyed in reverse: the builder zeroes what it used, then the segment goes
  // back to the keep.
  ~MessageBuilder() noexcept(false) override = default;

  bool UsesKeptSegment() const { return lent(); }
};

}  // namespace wattdb::net
