#include "rpc/proto_util.h"

namespace wattdb::rpc {

std::string Str(capnp::Data::Reader d) {
  return std::string(reinterpret_cast<const char*>(d.begin()), d.size());
}

std::string_view View(capnp::Data::Reader d) {
  return std::string_view(reinterpret_cast<const char*>(d.begin()), d.size());
}

kj::ArrayPtr<const kj::byte> Bytes(const std::string& s) {
  return kj::arrayPtr(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}

void SetStatus(proto::Status::Builder b, const Status& s) {
  b.setCode(static_cast<uint8_t>(s.code()));
  if (!s.ok()) {
    b.setMessage(s.message());
    b.setSqlstate(s.sqlstate());
  }
}

Status FromProto(proto::Status::Reader r) {
  if (r.getCode() == 0) return Status::OK();
  uint8_t code = r.getCode();
  if (code > static_cast<uint8_t>(Status::Code::kConflict))
    code = static_cast<uint8_t>(Status::Code::kInternal);
  return Status(static_cast<Status::Code>(code), r.getMessage(), r.getSqlstate());
}

}  // namespace wattdb::rpc
