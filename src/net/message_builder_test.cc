#include "net/message_builder.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <capnp/serialize.h>
#include <gtest/gtest.h>

#include "proto/node_service.capnp.h"

namespace wattdb::net {
namespace {

// A message's bytes, as it goes on the wire.
std::string Flat(capnp::MessageBuilder& mb) {
  auto a = capnp::messageToFlatArray(mb);
  auto bytes = a.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

void FillSmall(capnp::MessageBuilder& mb) { mb.initRoot<proto::Response>().setCpuNanos(7); }

void FillLarge(capnp::MessageBuilder& mb, size_t bytes) {
  auto r = mb.initRoot<proto::Response>();
  r.initStatus().setMessage(std::string(bytes, 'x'));
  r.setIncarnation(~uint64_t{0});
  auto rows = r.initScanBatch().initRows(3);
  for (uint32_t i = 0; i < rows.size(); i++) rows.set(i, kj::heapArray<kj::byte>(64 + i).asPtr());
}

// What a builder of capnp's own (a fresh zeroed segment) makes of `fill`.
std::string Expected(void (*fill)(capnp::MessageBuilder&)) {
  capnp::MallocMessageBuilder plain;
  fill(plain);
  return Flat(plain);
}

TEST(MessageBuilderTest, AMessageAfterALargerOneHoldsOnlyItsOwnFields) {
  const auto small = Expected(FillSmall);
  for (size_t bytes : {100, 4000, 20000}) {  // within the kept segment, filling it, beyond it
    {
      MessageBuilder big;
      ASSERT_TRUE(big.UsesKeptSegment());
      FillLarge(big, bytes);
    }
    MessageBuilder next;  // the same kept segment, zeroed where the larger message was
    ASSERT_TRUE(next.UsesKeptSegment());
    FillSmall(next);
    EXPECT_EQ(Flat(next), small) << "after a message of " << bytes << " bytes";
  }
}

TEST(MessageBuilderTest, NestedBuildersGetSegmentsOfTheirOwn) {
  const auto small = Expected(FillSmall);
  std::vector<std::unique_ptr<MessageBuilder>> alive;
  for (int i = 0; i < internal::ScratchSegment::kKept + 2; i++) {
    alive.push_back(std::make_unique<MessageBuilder>());
    EXPECT_EQ(alive.back()->UsesKeptSegment(), i < internal::ScratchSegment::kKept) << i;
  }
  for (auto& b : alive) FillSmall(*b);
  for (auto& b : alive) EXPECT_EQ(Flat(*b), small);
  // A message built in one does not show in another.
  FillLarge(*alive[1], 300);
  EXPECT_EQ(Flat(*alive[0]), small);
  EXPECT_EQ(Flat(*alive[2]), small);
  while (!alive.empty()) alive.pop_back();  // destroyed in reverse, as on a stack
  MessageBuilder again;
  EXPECT_TRUE(again.UsesKeptSegment());
  FillSmall(again);
  EXPECT_EQ(Flat(again), small);
}

TEST(MessageBuilderTest, ALargeMessageReadsBackWhole) {
  MessageBuilder mb;
  FillLarge(mb, 100000);  // many times the kept segment
  auto flat = capnp::messageToFlatArray(mb);
  capnp::FlatArrayMessageReader reader(flat);
  auto r = reader.getRoot<proto::Response>();
  EXPECT_EQ(r.getStatus().getMessage().size(), 100000u);
  EXPECT_EQ(r.getIncarnation(), ~uint64_t{0});
  ASSERT_EQ(r.getScanBatch().getRows().size(), 3u);
  EXPECT_EQ(r.getScanBatch().getRows()[2].size(), 66u);
}

TEST(MessageBuilderTest, ThreadsKeepTheirOwnSegments) {
  const auto small = Expected(FillSmall);
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; i++) {
        {
          MessageBuilder big;
          FillLarge(big, 50 + (i * 37 + t) % 3000);
        }
        MessageBuilder mb;
        FillSmall(mb);
        if (mb.UsesKeptSegment() && Flat(mb) == small) ok[t]++;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; t++) EXPECT_EQ(ok[t], 2000) << "thread " << t;
}

}  // namespace
}  // namespace wattdb::net
