// Fuzz target: decoders of bytes PostgreSQL clients send. The first byte picks one:
// startup packet parameters, a bound parameter (text or binary, of a type picked by the
// second byte), or COPY data (text or CSV).
#include <cstddef>
#include <cstdint>
#include <string>

#include "master/pgwire/pg_copy.h"
#include "master/pgwire/pg_protocol.h"
#include "master/pgwire/pg_values.h"

using namespace wattdb;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  std::string_view rest(reinterpret_cast<const char*>(data) + 2, size - 2);
  static const int32_t kOids[] = {16, 20, 21, 23, 25, 700, 701, 1043, 1042, 1114, 1700, 0};
  switch (data[0] % 4) {
    case 0:
      (void)master::pg::ParseStartupParams(rest);
      break;
    case 1:
    case 2: {
      int32_t oid = kOids[data[1] % (sizeof(kOids) / sizeof(kOids[0]))];
      auto t = master::pg::TypeFromOid(oid);
      if (t.ok()) (void)master::pg::DecodeParam(rest, data[0] % 4 == 2, *t, oid);
      break;
    }
    default: {
      sql::CopyStmt s;
      s.csv = data[1] & 1;
      s.header = data[1] & 2;
      master::CopyRows rows;
      if (master::pg::ParseCopyData(rest, s, &rows).ok()) {
        for (size_t r = 0; r < rows.rows(); r++) {  // every field within the buffer
          for (size_t f = rows.row_begin(r); f < rows.row_end(r); f++) (void)rows.text(f).size();
        }
      }
      (void)master::pg::WholeRowsPrefix(rest, s);
      break;
    }
  }
  return 0;
}
