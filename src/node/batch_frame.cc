#include "node/batch_frame.h"

#include "net/connection.h"
#include "query/exec/batch_codec.h"

namespace wattdb::node {

void BatchFrame::Add(const exec::Batch& b, Clock::time_point now) {
  if (sizes_.empty()) first_ = now;
  size_t before = bytes_.size();
  exec::EncodeBatch(b, &bytes_);
  sizes_.push_back(static_cast<uint32_t>(bytes_.size() - before));
}

bool BatchFrame::Full(Clock::time_point now) const {
  return !sizes_.empty() && (bytes_.size() >= target_ || now - first_ >= kWait);
}

void BatchFrame::Attach(capnp::MessageBuilder& mb, proto::Response::ScanBatch::Builder b) {
  if (sizes_.empty()) return;
  if (sizes_.size() > 1) {
    auto l = b.initColumnSizes(sizes_.size());
    for (size_t i = 0; i < sizes_.size(); i++) l.set(i, sizes_[i]);
  }
  b.adoptColumns(net::ReferenceBlob(mb, &bytes_));  // pads bytes_ to a word: Clear() before reuse
}

void BatchFrame::Clear() {
  bytes_.clear();
  sizes_.clear();
}

}  // namespace wattdb::node
