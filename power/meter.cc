#include "power/meter.h"

namespace wattdb::power {

Result<std::unique_ptr<Meter>> MakeNodeMeter(const NodeConfig& node, const HostProfile& profile) {
  const std::string& t = node.meter.type;
  if (t == "model") return MakeModelMeter(profile);
  if (t == "ipmi-dcmi") return MakeIpmiDcmiMeter(node.ipmi);
  if (t == "rapl") return MakeRaplMeter(node.meter.source);
  if (t == "external") return MakeExternalMeter(node.meter);
  if (t == "none") return std::unique_ptr<Meter>();
  return Status::InvalidArgument(fmt::format("node {}: unknown meter '{}'", node.id, t));
}

Result<std::unique_ptr<Meter>> MakeInfraMeter(const InfraConfig& infra) {
  const std::string& t = infra.meter.type;
  if (t == "model") return MakeInfraModelMeter(infra);
  if (t == "rapl") return MakeRaplMeter(infra.meter.source);
  if (t == "external") return MakeExternalMeter(infra.meter);
  if (t == "none") return std::unique_ptr<Meter>();
  return Status::InvalidArgument(fmt::format("{}: unknown meter '{}'", infra.name, t));
}

}  // namespace wattdb::power
