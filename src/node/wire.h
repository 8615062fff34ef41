// The node service's side of its wire format: converting between Cap'n Proto messages
// (proto/node_service.capnp) and WattDB types, and sending replies. For the request handlers
// of NodeServer only.
#pragma once

#include <string>

#include <capnp/message.h>

#include "common/failpoint.h"
#include "common/logging.h"
#include "common/status.h"
#include "net/connection.h"
#include "proto/node_service.capnp.h"
#include "rpc/proto_util.h"
#include "storage/segment_store.h"

namespace wattdb::node {

// A scan batch frame carries about this many bytes of rows at most (frames are capped at
// net::kMaxMessageBytes; batches of wide rows are cut short).
constexpr size_t kScanBatchBytes = 4u << 20;

using rpc::Bytes;
using rpc::FromProto;
using rpc::SetStatus;
using rpc::Str;
using rpc::View;
IndexKeySpec SpecFrom(proto::IndexSpec::Reader r);
void SpecTo(proto::IndexSpec::Builder b, const IndexKeySpec& s);
storage::SegmentMeta MetaFrom(proto::SegmentMeta::Reader r);
void MetaTo(proto::SegmentMeta::Builder b, const storage::SegmentMeta& m);
// A segment's metadata and counters, as listings and heartbeats carry them.
void StatsTo(proto::SegmentStats::Builder b, const storage::SegmentInfo& s);

// The thread CPU clock at the connection thread's previous reply frame (or when it began
// serving): a reply counts what its thread spent since, its request's wake-up and receive too.
extern thread_local uint64_t tl_cpu_mark;
// Sends a Response stamped with the CPU spent on the request since the previous frame (none
// over an in-memory connection: the caller's own thread did the work).
Status SendResponse(net::Connection& conn, capnp::MessageBuilder& mb);
// This process's random id, stamped on every reply: a master that sees it change knows the
// node restarted (and may have lost commits it applied without syncing).
uint64_t Incarnation();
// A Response with only a status.
Status Reply(net::Connection& conn, const Status& s);
// A segment with prepared, undecided writes cannot split or move until they are decided (55006).
Status InUse(SegmentId id);
Status FsyncFile(const std::string& path);

}  // namespace wattdb::node
