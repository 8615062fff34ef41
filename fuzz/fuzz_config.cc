// Fuzz target: the cluster config loader (TOML). Any text gives a config or an error that
// names the file, line and key.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)wattdb::ParseConfig(std::string(reinterpret_cast<const char*>(data), size), "fuzz.toml");
  return 0;
}
