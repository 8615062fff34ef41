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
    if (line == name) {
      std::remove(file);
      Log("failpoint")->warn("failpoint fired name={}: exiting", name);
      Log("failpoint")->flush();
      _exit(86);
    }
    if (line == std::string(name) + " stop") {
      std::remove(file);
      Log("failpoint")->warn("failpoint fired name={}: stopping", name);
      Log("failpoint")->flush();
      raise(SIGSTOP);
      return;
    }
  }
}

}  // namespace wattdb
