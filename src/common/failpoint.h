// Failpoints: named places where a test can make this process die abruptly, to exercise
// crash recovery on real processes.
//
// When the environment variable WATTDB_FAILPOINTS_FILE names a file, MaybeFail(name) reads it;
// if the file lists `name` (one per line), the file is removed (the failpoint fires once: in
// the one process whose removal succeeded) and the process exits immediately with status 86,
// without cleanup — as a crash would. A line
// `name stop` instead freezes the process there (SIGSTOP to itself, as a stalled host would);
// it goes on from that point when it gets SIGCONT. Without the variable, MaybeFail costs one
// check of a cached flag.
#pragma once

namespace wattdb {

void MaybeFail(const char* name);

}  // namespace wattdb
