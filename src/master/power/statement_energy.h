// Energy per statement: an estimate of the joules a statement cost the cluster.
//
// While a statement runs, its session thread collects the CPU it used: its own (the thread's
// CPU clock, plus what the master's other threads report having spent for it) and, per node, the
// CPU each node reports with every reply (Response.cpuNanos). At the end, each component's energy
// over the statement's run time (its current watts × the run time) is apportioned by the
// statement's share of that component's CPU in the run:
//   node n:  share = statement CPU on n / max(statement CPU on n, n's CPU rate × run time)
//   master:  share = the session thread's CPU / the master process's (its CPU rate × run time)
//   other infrastructure (switch): share = the statement's CPU / all CPU seen, over the
//            components above
// A component the statement did not use costs it nothing; one it used alone costs it all of
// its draw, idle power included (the energy the cluster spent while serving it). Components
// whose meter is failing are left out and counted. Estimates, not measurements: CPU time is
// the only proxy for attribution, CPU rates (the nodes' from telemetry, the master's own) and
// watts come from the latest meter sample (PowerMonitor::Rates), so that a statement pays no
// system call for them.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/schema.h"
#include "common/small_containers.h"

namespace wattdb::master {

class PowerMonitor;
struct EnergyRates;

struct StatementEnergy {
  int64_t started_us = 0;  // wall clock
  double seconds = 0;
  double joules = 0;
  double master_joules = 0, node_joules = 0, infra_joules = 0;
  double cpu_ms = 0;      // the statement's CPU, master and nodes
  int unmetered = 0;      // components left out (meter failing)
  std::string statement;  // the command tag
};

// Where a session's previous statement ended on its thread's CPU clock. With it, a statement's
// CPU starts there: the protocol work between two statements (receiving, parsing, binding the
// next one) is the next one's, and a statement reads the thread's clock (a system call) once
// instead of twice. A carry read on another thread, or never set, is not used.
struct CpuCarry {
  std::thread::id thread;
  uint64_t thread_ns = 0;
};

// Collects the current statement's CPU on this thread. Nested scopes are not supported: an
// inner scope is inert (the outer one counts).
class StatementCpuScope {
 public:
  // `carry` (may be null) is read here and advanced by Finish.
  explicit StatementCpuScope(CpuCarry* carry = nullptr);
  ~StatementCpuScope();
  // Adds CPU a node reported for this thread's current statement (no-op outside a scope).
  static void AddNode(NodeId node, uint64_t nanos);
  // Adds CPU the master spent for this thread's current statement on other threads (an
  // exchange's read-ahead, a Gather's parts), counted as the session thread's own (no-op
  // outside a scope).
  static void AddOtherThreads(uint64_t nanos);
  // The energy of the statement so far.
  StatementEnergy Finish(const PowerMonitor& monitor) const;
  StatementEnergy Finish(const EnergyRates& rates) const;
  // For a statement of no work of its own (BEGIN): Finish books it no thread CPU and reads no
  // clock; with a carry, what it spent goes to the session's next statement.
  void PassOn() { pass_on_ = carry_ != nullptr; }

 private:
  bool active_ = false;
  bool pass_on_ = false;
  CpuCarry* carry_;
  int64_t start_steady_us_, start_wall_us_;
  uint64_t start_thread_ns_;
  SmallFlatMap<NodeId, uint64_t> nodes_;
  uint64_t other_threads_ns_ = 0;
};

// The most recent statements' energy (wattdb_statement_energy). Thread-safe.
class StatementEnergyLog {
 public:
  explicit StatementEnergyLog(size_t capacity = 1000) : capacity_(capacity) {}
  void Add(StatementEnergy e);
  std::vector<StatementEnergy> Snapshot() const;

 private:
  const size_t capacity_;
  mutable Mutex mu_;
  std::deque<StatementEnergy> entries_ GUARDED_BY(mu_);
};

}  // namespace wattdb::master
