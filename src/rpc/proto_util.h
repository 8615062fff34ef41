// Conversions between Cap'n Proto fields of the node service (proto/node_service.capnp) and
// WattDB types, shared by both ends of it.
#pragma once

#include <string>
#include <string_view>

#include <capnp/common.h>
#include <kj/common.h>

#include "common/status.h"
#include "proto/node_service.capnp.h"

namespace wattdb::rpc {

std::string Str(capnp::Data::Reader d);
// The bytes of `d` where they lie (in the message, which must outlive the view).
std::string_view View(capnp::Data::Reader d);
// A view of `s` for a Data field (copied when set).
kj::ArrayPtr<const kj::byte> Bytes(const std::string& s);
void SetStatus(proto::Status::Builder b, const Status& s);
// A code this build does not know becomes Internal.
Status FromProto(proto::Status::Reader r);

}  // namespace wattdb::rpc
