#include "common/failpoint.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "common/logging.h"

namespace wattdb {

void MaybeFail(const char* name) {
  static const char* file = std::getenv("WATTDB_FAILPOINTS_FILE");
  if (!file) return;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    // Removing the file claims the failpoint: of processes reaching it at once, only the one
    // whose removal succeeds fires it.
    if (line == name) {
      if (std::remove(file) != 0) return;
      Log("failpoint")->warn("failpoint fired name={}: exiting", name);
      Log("failpoint")->flush();
      _exit(86);
    }
    if (line == std::string(name) + " stop") {
      if (std::remove(file) != 0) return;
      Log("failpoint")->warn("failpoint fired name={}: stopping", name);
      Log("failpoint")->flush();
      raise(SIGSTOP);
      return;
    }
  }
}

}  // namespace wattdb
