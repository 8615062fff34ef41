// Fuzz target: a message frame's payload as a cluster peer sends it. It is decoded as the
// receiving side does (net::DecodeMessage) and read as every message type a node or the
// master handles, fully traversed; malformed contents must end in a kj::Exception (which
// the servers catch) or a Status, never a crash.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <kj/exception.h>

#include "net/connection.h"
#include "proto/cluster.capnp.h"
#include "proto/node_service.capnp.h"

using namespace wattdb;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  size -= size % 8;  // frames are whole words; the receiver refuses others before decoding
  if (size < 8 || size > (1u << 20)) return 0;
  auto words = kj::heapArray<capnp::word>(size / 8);
  std::memcpy(words.begin(), data, size);
  auto msg = net::DecodeMessage(std::move(words));
  if (!msg.ok()) return 0;
  try {
    auto req = (*msg)->Root<proto::Request>();
    (void)req.totalSize();
    switch (req.which()) {
      case proto::Request::PREPARE:
        for (auto w : req.getPrepare().getWrites()) {
          (void)w.getKey();
          (void)w.getRow();
          (void)w.getCheck();
        }
        break;
      case proto::Request::SCAN:
        (void)req.getScan().getLo();
        (void)req.getScan().getIndexHi();
        break;
      case proto::Request::ADD_INDEX:
        for (auto c : req.getAddIndex().getSpec().getColumns()) (void)c;
        break;
      case proto::Request::PULL_SEGMENT:
        (void)req.getPullSegment().getSourceHost();
        break;
      case proto::Request::CREATE_SEGMENT:
        (void)req.getCreateSegment().getIndexes().size();
        break;
      default:
        break;
    }
  } catch (const kj::Exception&) {
  }
  try {
    auto resp = (*msg)->Root<proto::Response>();
    (void)resp.totalSize();
    if (resp.which() == proto::Response::SEGMENT_EXPORT) {
      for (auto f : resp.getSegmentExport().getFiles()) (void)f.getName();
    }
    if (resp.which() == proto::Response::SCAN_BATCH) {
      for (auto r : resp.getScanBatch().getRows()) (void)r.size();
    }
    (void)resp.getStatus().getMessage();
  } catch (const kj::Exception&) {
  }
  try {
    auto nm = (*msg)->Root<proto::NodeMessage>();
    (void)nm.totalSize();
    if (nm.which() == proto::NodeMessage::REGISTER) (void)nm.getRegister().getHost();
    if (nm.which() == proto::NodeMessage::HEARTBEAT) {
      for (auto s : nm.getHeartbeat().getSegments()) (void)s.getMeta().getLo();
    }
  } catch (const kj::Exception&) {
  }
  return 0;
}
