// Fuzz target: the SQL parser. Any text must give statements or a clean error (never a
// crash, hang or unbounded recursion).
#include <cstddef>
#include <cstdint>
#include <string>

#include "query/sql/parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string sql(reinterpret_cast<const char*>(data), size);
  (void)wattdb::sql::Parse(sql);
  return 0;
}
