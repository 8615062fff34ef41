#include "master/power/statement_energy.h"

#include <thread>

#include <gtest/gtest.h>

#include "master/power/power_monitor.h"

namespace wattdb::master {
namespace {

// Spends `ms` of this thread's CPU.
void Burn(int ms) {
  uint64_t until = ThreadCpuNanos() + static_cast<uint64_t>(ms) * 1000000;
  volatile uint64_t x = 0;
  while (ThreadCpuNanos() < until) x = x + 1;
}

TEST(StatementCpuScopeTest, AStatementsCpuStartsWhereItsSessionsPreviousOneEnded) {
  const EnergyRates rates;  // nothing metered: only the CPU is counted
  CpuCarry carry;
  {
    StatementCpuScope first(&carry);
    Burn(20);
    EXPECT_GE(first.Finish(rates).cpu_ms, 20);
  }
  EXPECT_EQ(carry.thread, std::this_thread::get_id());
  EXPECT_GT(carry.thread_ns, 0u);
  Burn(30);  // between statements: receiving and binding the next one
  {
    StatementCpuScope next(&carry);
    EXPECT_GE(next.Finish(rates).cpu_ms, 30);
  }
  {
    StatementCpuScope uncarried;
    EXPECT_LT(uncarried.Finish(rates).cpu_ms, 30);
  }
  // A carry from another thread's clock means nothing here.
  double elsewhere = -1;
  std::thread([&] {
    StatementCpuScope other(&carry);
    elsewhere = other.Finish(rates).cpu_ms;
  }).join();
  EXPECT_GE(elsewhere, 0);
  EXPECT_LT(elsewhere, 30);
  EXPECT_NE(carry.thread, std::this_thread::get_id());  // advanced by the other thread
}

// A statement that passes its CPU on (BEGIN) books none; the session's next statement gets it.
TEST(StatementCpuScopeTest, AStatementThatPassesOnItsCpuLeavesItToTheNextOne) {
  const EnergyRates rates;
  CpuCarry carry;
  {
    StatementCpuScope first(&carry);
    first.Finish(rates);
  }
  Burn(20);  // receiving the BEGIN
  {
    StatementCpuScope begin(&carry);
    begin.PassOn();
    Burn(10);
    EXPECT_EQ(begin.Finish(rates).cpu_ms, 0);
  }
  {
    StatementCpuScope next(&carry);
    EXPECT_GE(next.Finish(rates).cpu_ms, 30);
  }
  {
    StatementCpuScope uncarried;  // nothing to pass on to: it books its own
    uncarried.PassOn();
    Burn(10);
    EXPECT_GE(uncarried.Finish(rates).cpu_ms, 10);
  }
}

// CPU the master's other threads spent for a statement (an exchange's read-ahead, a Gather's
// parts), reported on its session thread, is the statement's; reported outside a scope, or
// after it, nobody's.
TEST(StatementCpuScopeTest, OtherThreadsCpuReportedOnTheSessionThreadIsTheStatements) {
  const EnergyRates rates;
  StatementCpuScope::AddOtherThreads(uint64_t{900} * 1000000);  // no scope: dropped
  double with = 0, without = 0;
  {
    StatementCpuScope stmt;
    uint64_t spent = 0;
    std::thread([&] {
      uint64_t t0 = ThreadCpuNanos();
      Burn(40);
      spent = ThreadCpuNanos() - t0;
      StatementCpuScope::AddOtherThreads(spent);  // another thread, outside any scope: dropped
    }).join();
    StatementCpuScope::AddOtherThreads(spent);
    with = stmt.Finish(rates).cpu_ms;
  }
  {
    StatementCpuScope stmt;
    without = stmt.Finish(rates).cpu_ms;
  }
  EXPECT_GE(with, 40);
  EXPECT_LT(with, 900);
  EXPECT_LT(without, 40);
}

}  // namespace
}  // namespace wattdb::master
