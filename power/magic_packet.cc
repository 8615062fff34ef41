#include "power/magic_packet.h"

#include <sys/socket.h>

#include <cstdio>

#include "net/stream.h"

namespace wattdb::power {

Result<Mac> ParseMac(const std::string& text) {
  unsigned b[6];
  char tail;
  if (text.size() != 17 || std::sscanf(text.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1],
                                       &b[2], &b[3], &b[4], &b[5], &tail) != 6) {
    return Status::InvalidArgument(fmt::format("'{}' is not a MAC address", text));
  }
  Mac m;
  for (int i = 0; i < 6; i++) m[i] = static_cast<uint8_t>(b[i]);
  return m;
}

std::string BuildMagicPacket(const Mac& mac) {
  std::string p(6, '\xff');
  for (int i = 0; i < 16; i++) p.append(reinterpret_cast<const char*>(mac.data()), mac.size());
  return p;
}

bool IsMagicPacketFor(const std::string& payload, const Mac& mac) {
  return payload.size() >= 102 && payload.compare(0, 102, BuildMagicPacket(mac)) == 0;
}

Status SendMagicPacket(const WolConfig& wol) {
  ASSIGN_OR_RETURN(Mac mac, ParseMac(wol.mac));
  namespace asio = net::asio;
  boost::system::error_code ec;
  auto addr = asio::ip::make_address_v4(wol.broadcast, ec);
  if (ec)
    return Status::InvalidArgument(
        fmt::format("wol broadcast '{}' is not an IPv4 address", wol.broadcast));
  asio::io_context io;
  asio::ip::udp::socket s(io);
  s.open(asio::ip::udp::v4(), ec);
  if (ec) return Status::IOError(fmt::format("udp socket: {}", ec.message()));
  s.set_option(asio::socket_base::broadcast(true), ec);
  if (!wol.interface.empty() &&
      setsockopt(s.native_handle(), SOL_SOCKET, SO_BINDTODEVICE, wol.interface.c_str(),
                 static_cast<socklen_t>(wol.interface.size())) != 0) {
    return Status::IOError(
        fmt::format("cannot send on interface {}: {}", wol.interface, strerror(errno)));
  }
  std::string packet = BuildMagicPacket(mac);
  // UDP send on an unconnected socket does not block on the network.
  s.send_to(asio::buffer(packet), asio::ip::udp::endpoint(addr, wol.port), 0, ec);
  if (ec) {
    return Status::IOError(fmt::format("magic packet to {}:{} for {}: {}", wol.broadcast, wol.port,
                                       wol.mac, ec.message()));
  }
  return Status::OK();
}

}  // namespace wattdb::power
