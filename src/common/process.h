// Process plumbing shared by the server binaries.
#pragma once

#include <signal.h>

namespace wattdb {

// Blocks SIGINT, SIGTERM and SIGHUP in this thread and every thread started after it, and ignores
// SIGPIPE (a peer closing a socket must not kill the server). Call first thing in main().
void BlockTerminationSignals();
// Waits for SIGINT or SIGTERM; returns the signal number. REQUIRES: BlockTerminationSignals().
// SIGHUP stays pending (ignored) unless WaitForSignal takes it.
int WaitForTerminationSignal();
// Waits for SIGINT, SIGTERM or SIGHUP; returns the signal number.
int WaitForSignal();

}  // namespace wattdb
