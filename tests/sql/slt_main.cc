// wattdb-slt: runs sqllogictest files against any PostgreSQL-protocol server.
#include <iostream>

#include "tests/sql/slt_runner.h"

int main(int argc, char** argv) {
  if (argc < 3 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::cout
        << "usage: wattdb-slt <libpq conninfo> <file.test>...\n"
           "Runs sqllogictest files against a WattDB master (or PostgreSQL, to check expected\n"
           "results). Exit status 1 if any record fails.\n";
    return argc < 3 && !(argc == 2 &&
                         (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h"))
               ? 2
               : 0;
  }
  wattdb::testing::PgConn conn(argv[1]);
  if (!conn.ok()) {
    std::cerr << "wattdb-slt: " << conn.error();
    return 2;
  }
  int failed = 0;
  for (int i = 2; i < argc; i++) {
    int records = 0;
    auto failures = wattdb::testing::RunSltFile(argv[i], conn, &records);
    for (auto& f : failures) std::cerr << argv[i] << ":" << f.line << ": " << f.message << "\n";
    std::cout << argv[i] << ": " << records << " records, " << failures.size() << " failures\n";
    failed += !failures.empty();
  }
  return failed ? 1 : 0;
}
