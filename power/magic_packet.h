// Wake-on-LAN magic packets: 6 bytes of 0xFF, then the target's MAC 16 times (102 bytes),
// sent as a UDP broadcast (port 9 by default).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "common/config.h"
#include "common/status.h"

namespace wattdb::power {

using Mac = std::array<uint8_t, 6>;

Result<Mac> ParseMac(const std::string& text);  // "52:54:00:aa:bb:cc"
std::string BuildMagicPacket(const Mac& mac);
// True if `payload` holds a magic packet for `mac` (extra bytes after it, e.g. a SecureOn
// password, are allowed).
bool IsMagicPacketFor(const std::string& payload, const Mac& mac);

// Sends the magic packet for `wol.mac` to wol.broadcast:wol.port with SO_BROADCAST, bound to
// wol.interface if set.
Status SendMagicPacket(const WolConfig& wol);

}  // namespace wattdb::power
