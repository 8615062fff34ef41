#include "node/batch_frame.h"

#include <gtest/gtest.h>

#include "query/exec/batch_codec.h"

namespace wattdb::node {
namespace {

// n integers in no order, below 1,000,003 (about 3 bytes each on the wire).
exec::Batch Ints(int n) {
  exec::Batch b;
  b.Reset(1);
  for (int i = 0; i < n; i++) {
    b.cols[0].Append(Value::Int64(int64_t{i} * 7919 % 1000003));
    b.rows++;
  }
  return b;
}

// The batches a frame's message carries, decoded.
std::vector<exec::Batch> Carried(BatchFrame& f) {
  capnp::MallocMessageBuilder mb;
  auto b = mb.initRoot<proto::Response>().initScanBatch();
  f.Attach(mb, b);
  auto r = b.asReader();
  std::string_view bytes(reinterpret_cast<const char*>(r.getColumns().begin()),
                         r.getColumns().size());
  std::vector<uint32_t> sizes;
  for (uint32_t n : r.getColumnSizes()) sizes.push_back(n);
  if (sizes.empty() && !bytes.empty()) sizes.push_back(static_cast<uint32_t>(bytes.size()));
  std::vector<exec::Batch> out;
  size_t at = 0;
  for (uint32_t n : sizes) {
    out.emplace_back();
    EXPECT_TRUE(exec::DecodeBatch(bytes.substr(at, n), &out.back()).ok());
    at += n;
  }
  EXPECT_EQ(at, bytes.size());
  return out;
}

TEST(BatchFrame, FillsToItsSizeOrItsWaitThenCarriesItsBatchesInOrder) {
  auto t0 = BatchFrame::Clock::now();
  BatchFrame f(10000);
  EXPECT_TRUE(f.empty());
  EXPECT_FALSE(f.Full(t0));
  const exec::Batch big = Ints(4096);  // about 12 KiB
  const exec::Batch small = Ints(10);
  f.Add(small, t0);
  EXPECT_FALSE(f.Full(t0));
  EXPECT_FALSE(f.Full(t0 + BatchFrame::kWait - std::chrono::microseconds(1)));
  EXPECT_TRUE(f.Full(t0 + BatchFrame::kWait));  // a slow fragment's first batch does not wait on
  f.Add(big, t0 + std::chrono::milliseconds(1));
  EXPECT_TRUE(f.Full(t0 + std::chrono::milliseconds(1)));  // past 10,000 bytes
  auto got = Carried(f);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].rows, 10u);
  EXPECT_EQ(got[1].rows, 4096u);
  EXPECT_EQ(got[1].cols[0].GetValue(4095).as_int(), int64_t{4095} * 7919 % 1000003);
  f.Clear();
  EXPECT_TRUE(f.empty());
  // Reused, with one batch: no sizes (the reply of one batch, as before frames held several).
  auto t1 = t0 + std::chrono::seconds(1);
  f.Add(small, t1);
  EXPECT_FALSE(f.Full(t1)) << "the wait counts from the frame's own first batch";
  got = Carried(f);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].rows, 10u);
  // Size 0: every batch is a frame of its own.
  BatchFrame one(0);
  one.Add(small, t0);
  EXPECT_TRUE(one.Full(t0));
}

}  // namespace
}  // namespace wattdb::node
