#include "common/process.h"

#include <pthread.h>

namespace wattdb {

namespace {
sigset_t TerminationSignals() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  return s;
}
}  // namespace

void BlockTerminationSignals() {
  sigset_t s = TerminationSignals();
  sigaddset(&s, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

int WaitForTerminationSignal() {
  sigset_t s = TerminationSignals();
  int sig = 0;
  sigwait(&s, &sig);
  return sig;
}

int WaitForSignal() {
  sigset_t s = TerminationSignals();
  sigaddset(&s, SIGHUP);
  int sig = 0;
  sigwait(&s, &sig);
  return sig;
}

}  // namespace wattdb
