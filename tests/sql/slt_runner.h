// A sqllogictest runner over libpq (the sqllogictest-rs file format):
//   statement ok | statement error        then SQL up to a blank line
//   query <types> [nosort|rowsort|valuesort]   then SQL, "----", expected rows
// Values print as the server sends them; NULL as "NULL", the empty string as "(empty)";
// columns of a row are separated by one space. `skipif wattdb`/`onlyif <x>` guard a record;
// `halt` stops the file; `hash-threshold` and `control resultmode valuewise` are understood.
#pragma once

#include <string>
#include <vector>

#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {

struct SltFailure {
  int line;
  std::string message;
};

// Runs every record of `path` on `conn`; returns the failures (empty = pass).
std::vector<SltFailure> RunSltFile(const std::string& path, PgConn& conn, int* records_run);

}  // namespace wattdb::testing
