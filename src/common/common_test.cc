#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/codec.h"
#include "common/config.h"
#include "common/reaper.h"
#include "common/shared_bytes.h"
#include "common/sqlstate.h"
#include "common/stack_guard.h"
#include "common/thread_cache.h"
#include "common/timer_service.h"
#include "common/value.h"

namespace wattdb {
namespace {

std::string Key(const Value& v) {
  std::string s;
  EncodeKeyValue(v, &s);
  return s;
}

TEST(KeyCodec, IntegersSortNumerically) {
  std::vector<int64_t> xs = {-1000000000000LL, -5, -1, 0, 1, 2, 255, 256, 1LL << 40};
  for (size_t i = 0; i + 1 < xs.size(); i++) {
    EXPECT_LT(Key(Value::Int64(xs[i])), Key(Value::Int64(xs[i + 1]))) << xs[i];
  }
}

TEST(KeyCodec, DoublesSortNumerically) {
  std::vector<double> xs = {-1e300, -2.5, -0.0001, 0.0, 1e-300, 3.25, 1e300};
  for (size_t i = 0; i + 1 < xs.size(); i++) {
    EXPECT_LT(Key(Value::Double(xs[i])), Key(Value::Double(xs[i + 1]))) << xs[i];
  }
  EXPECT_EQ(Key(Value::Double(-0.0)), Key(Value::Double(0.0)));
}

TEST(KeyCodec, TextIsPrefixFreeAndOrdered) {
  std::vector<std::string> xs = {"", std::string("\0", 1), "a", std::string("a\0", 2), "ab", "b"};
  for (size_t i = 0; i + 1 < xs.size(); i++) {
    std::string a = Key(Value::Text(xs[i])), b = Key(Value::Text(xs[i + 1]));
    EXPECT_LT(a, b) << i;
    EXPECT_NE(b.compare(0, a.size(), a), 0) << "prefix at " << i;
  }
}

TEST(KeyCodec, CompositeRoundTrip) {
  std::string k;
  EncodeKeyValue(Value::Text(std::string("x\0y", 3)), &k);
  EncodeKeyValue(Value::Int32(-7), &k);
  EncodeKeyValue(Value::Double(2.5), &k);
  auto back = DecodeKey(k, {{TypeId::kText}, {TypeId::kInt32}, {TypeId::kDouble}});
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ((*back)[0].as_text(), std::string("x\0y", 3));
  EXPECT_EQ((*back)[1].as_int(), -7);
  EXPECT_EQ((*back)[2].as_double(), 2.5);
  EXPECT_FALSE(
      DecodeKey(k.substr(0, k.size() - 1), {{TypeId::kText}, {TypeId::kInt32}, {TypeId::kDouble}})
          .ok());
}

TEST(KeyCodec, CompositeOrderMatchesTupleOrder) {
  std::mt19937 rng(7);
  std::vector<std::pair<std::string, int64_t>> tuples;
  for (int i = 0; i < 300; i++) {
    tuples.push_back({std::string(rng() % 3, static_cast<char>('a' + rng() % 3)),
                      static_cast<int64_t>(rng() % 11) - 5});
  }
  auto enc = [](const std::pair<std::string, int64_t>& t) {
    std::string k;
    EncodeKeyValue(Value::Text(t.first), &k);
    EncodeKeyValue(Value::Int64(t.second), &k);
    return k;
  };
  for (size_t i = 0; i + 1 < tuples.size(); i++) {
    bool tuple_less = tuples[i] < tuples[i + 1];
    bool key_less = enc(tuples[i]) < enc(tuples[i + 1]);
    EXPECT_EQ(tuple_less, key_less) << i;
  }
}

TEST(RowCodec, RoundTripAndTruncation) {
  std::vector<Value> row = {Value::Int32(1),     Value(),           Value::Text("héllo"),
                            Value::Double(-0.5), Value::Bool(true), Value::Int64(-(1LL << 60))};
  std::string enc;
  EncodeRow(row, &enc);
  std::vector<Value> back;
  ASSERT_TRUE(DecodeRow(enc, &back).ok());
  ASSERT_EQ(back.size(), row.size());
  for (size_t i = 0; i < row.size(); i++) EXPECT_EQ(back[i].Compare(row[i]), 0) << i;
  EXPECT_TRUE(back[1].is_null());
  for (size_t cut = 0; cut < enc.size(); cut++) {
    EXPECT_FALSE(DecodeRow(enc.substr(0, cut), &back).ok()) << cut;
  }
}

TEST(Value, CastsFollowSqlRules) {
  EXPECT_EQ(Value::Text("42").CastTo({TypeId::kInt32}).value().as_int(), 42);
  EXPECT_EQ(Value::Text("4x").CastTo({TypeId::kInt32}).status().sqlstate(),
            sqlstate::kInvalidTextRepresentation);
  EXPECT_EQ(Value::Int64(1LL << 40).CastTo({TypeId::kInt32}).status().sqlstate(),
            sqlstate::kNumericValueOutOfRange);
  EXPECT_EQ(Value::Text("abcd").CastTo({TypeId::kText, 3}).status().sqlstate(),
            sqlstate::kStringDataRightTruncation);
  EXPECT_EQ(Value::Double(2.5).CastTo({TypeId::kInt64}).value().as_int(), 2);  // half to even
  EXPECT_EQ(Value::Double(3.5).CastTo({TypeId::kInt64}).value().as_int(), 4);
  EXPECT_EQ(Value::Double(0.1).ToText(), "0.1");
  EXPECT_EQ(Value::Bool(false).ToText(), "f");
}

// FromText (COPY's fields) answers as a text value's CastTo does, errors included.
TEST(Value, FromTextAnswersAsACastFromText) {
  const SqlType numeric_15_2{TypeId::kNumeric, (15 << 16) | 2};
  const std::vector<SqlType> types = {{TypeId::kInt32},   {TypeId::kInt64},     numeric_15_2,
                                      {TypeId::kNumeric}, {TypeId::kTimestamp}, {TypeId::kText},
                                      {TypeId::kText, 3}, {TypeId::kText, -4},  {TypeId::kDouble},
                                      {TypeId::kBool}};
  const std::vector<std::string> inputs = {"42",
                                           " -7 ",
                                           "+5",
                                           "2147483648",
                                           "-2147483649",
                                           "9223372036854775808",
                                           "4x",
                                           "",
                                           "12.345",
                                           "1e3",
                                           "abc",
                                           "abcd",
                                           "1996-03-13 00:00:00",
                                           "1996-02-30",
                                           "t",
                                           "NaN",
                                           "0.005",
                                           "1234567890123456.5"};
  for (const auto& t : types) {
    for (const auto& in : inputs) {
      auto fast = Value::FromText(in, t);
      auto cast = Value::Text(in).CastTo(t);
      ASSERT_EQ(fast.ok(), cast.ok()) << t.ToString() << " '" << in << "'";
      if (!fast.ok()) {
        EXPECT_EQ(fast.status().sqlstate(), cast.status().sqlstate())
            << t.ToString() << " '" << in << "'";
        EXPECT_EQ(fast.status().message(), cast.status().message());
        continue;
      }
      EXPECT_EQ(fast->type(), cast->type()) << t.ToString() << " '" << in << "'";
      EXPECT_EQ(fast->ToText(), cast->ToText()) << t.ToString() << " '" << in << "'";
    }
  }
  EXPECT_EQ(Value::FromText("2147483648", {TypeId::kInt32}).status().sqlstate(),
            sqlstate::kNumericValueOutOfRange);
  EXPECT_EQ(Value::FromText("12.345", numeric_15_2)->ToText(), "12.35");
}

TEST(Value, NullsSortLast) {
  EXPECT_GT(Value().Compare(Value::Int32(5)), 0);
  EXPECT_LT(Value::Int32(5).Compare(Value()), 0);
  EXPECT_EQ(Value::Int32(1).Compare(Value::Double(1.0)), 0);
  EXPECT_EQ(Value::Int32(1).Hash(), Value::Double(1.0).Hash());
}

// PostgreSQL's order of doubles: NaN equals NaN and is above everything else, infinity too;
// -0.0 equals 0.0; a NULL is above NaN.
TEST(Value, NaNIsAboveEveryOtherDoubleAndEqualToItself) {
  const double nan = std::numeric_limits<double>::quiet_NaN(),
               inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(CompareDoubles(nan, nan), 0);
  EXPECT_EQ(CompareDoubles(nan, inf), 1);
  EXPECT_EQ(CompareDoubles(-inf, nan), -1);
  EXPECT_EQ(CompareDoubles(-0.0, 0.0), 0);
  EXPECT_EQ(CompareDoubles(1, 2), -1);
  EXPECT_EQ(Value::Double(nan).Compare(Value::Int64(INT64_MAX)), 1);
  EXPECT_EQ(Value::Int32(3).Compare(Value::Double(nan)), -1);
  EXPECT_GT(Value().Compare(Value::Double(nan)), 0);
  EXPECT_EQ(Value::Double(nan).Hash(), Value::Double(-nan).Hash());  // equal values hash alike
}

TEST(Config, DefaultHasThreeNodes) {
  auto c = LoadConfig("");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->nodes.size(), 3u);
  EXPECT_EQ(c->segment_bytes, 32ull << 20);
  // As in the paper: node 1 is the master node, metered as the master's host.
  EXPECT_EQ(c->nodes[0].power, "master");
  EXPECT_EQ(c->nodes[0].meter.type, "none");
  EXPECT_EQ(c->nodes[1].power, "local");
  EXPECT_EQ(c->nodes[1].meter.type, "model");
  EXPECT_EQ(c->ReplicationFactor(), 2) << "two copies on a cluster of two or more nodes";
}

TEST(Config, ReplicationFactorIsTwoUnlessSetOrOneNode) {
  auto one = ParseConfig("[[node]]\nid=1\nport=1\n", "a.toml");
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->ReplicationFactor(), 1);
  auto set = ParseConfig(
      "[cluster]\nreplication_factor = 1\n[[node]]\nid=1\nport=1\n"
      "[[node]]\nid=2\nport=2\n",
      "b.toml");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->ReplicationFactor(), 1);
  for (const char* bad : {"0", "8", "-1"}) {
    auto b = ParseConfig(fmt::format("[cluster]\nreplication_factor = {}\n[[node]]\nid=1\n"
                                     "port=1\n",
                                     bad),
                         "c.toml");
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_NE(b.status().message().find("replication_factor must be in 1..7"), std::string::npos)
        << b.status().message();
  }
}

TEST(Config, BadInputNamesTheProblem) {
  auto a = ParseConfig("[cluster\n", "x.toml");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("x.toml:1"), std::string::npos) << a.status().message();
  auto b = ParseConfig("[cluster]\nsegment_bytes = \"big\"\n[[node]]\nid=1\nport=1\n", "y.toml");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("segment_bytes"), std::string::npos);
  auto c = ParseConfig("[[node]]\nid=1\nport=1\n[[node]]\nid=1\nport=2\n", "z.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("duplicate"), std::string::npos);
  auto d = ParseConfig("[[node]]\nid=1\nport=99999\n", "p.toml");
  EXPECT_FALSE(d.ok());
  auto e = ParseConfig("[cluster]\nscan_frame_kb = -1\n[[node]]\nid=1\nport=1\n", "f.toml");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("scan_frame_kb must be in 0..16384"), std::string::npos)
      << e.status().message();
  auto f = ParseConfig("[cluster]\nscan_frame_kb = 0\n[[node]]\nid=1\nport=1\n", "f.toml");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->scan_frame_kb, 0);
  EXPECT_EQ(LoadConfig("")->scan_frame_kb, 64);
}

// A key or section the parser does not know is refused with its file, line and the known
// names (a misspelt setting would otherwise leave the default in force unnoticed).
TEST(Config, UnknownKeysAndSectionsAreRefused) {
  const std::string node = "[[node]]\nid=1\nport=1\n";
  struct Case {
    std::string text, expect;
  };
  for (const Case& k :
       {Case{"[master]\npg_port = 5433\nmetrics_port = 9187\n" + node,
             "u.toml:3: [master] has unknown key 'metrics_port'"},
        Case{"[cluster]\nsync_comit = false\n" + node,
             "u.toml:2: [cluster] has unknown key 'sync_comit'"},
        Case{"[auth]\nmethod = \"trust\"\ntrust_local = true\n" + node,
             "[auth] has unknown key 'trust_local'"},
        Case{"[[auth.user]]\nname = \"a\"\npasword = \"b\"\n" + node,
             "[[auth.user]] has unknown key 'pasword'"},
        Case{"[mastr]\npg_port = 5433\n" + node, "the top level has unknown key 'mastr'"}}) {
    auto r = ParseConfig(k.text, "u.toml");
    ASSERT_FALSE(r.ok()) << k.text;
    EXPECT_NE(r.status().message().find(k.expect), std::string::npos) << r.status().message();
  }
  // Every key the embedded default names is known.
  EXPECT_TRUE(ParseConfig(kDefaultConfigToml, "default").ok());
  auto ok =
      ParseConfig("[power]\nmetrics_port = 9187\n[master]\nwork_mem_mb = 64\n" + node, "u.toml");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->metrics_port, 9187);
}

TEST(TimerService, RunsDueTimersInOrderAndNeverCancelledOnes) {
  TimerService timers;
  std::mutex mu;
  std::vector<int> fired;
  auto now = std::chrono::steady_clock::now();
  auto record = [&](int v) {
    return [&, v] {
      std::lock_guard<std::mutex> l(mu);
      fired.push_back(v);
    };
  };
  timers.Arm(now + std::chrono::milliseconds(30), record(2));
  timers.Arm(now + std::chrono::milliseconds(10), record(1));
  uint64_t never = timers.Arm(now + std::chrono::milliseconds(20), record(99));
  timers.Cancel(never);
  std::atomic<bool> last{false};
  timers.Arm(now + std::chrono::milliseconds(40), [&] { last = true; });
  while (!last) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::lock_guard<std::mutex> l(mu);
  EXPECT_EQ(fired, (std::vector<int>{1, 2}));
}

// Unbounded recursion stops with 54001 instead of overflowing the stack.
Status Recurse(int depth, int* reached) {
  CHECK_STACK_DEPTH();
  volatile char pad[512];  // a real frame, as a parser's
  pad[0] = static_cast<char>(depth);
  *reached = depth;
  Status s = Recurse(depth + 1, reached);
  pad[1] = pad[0];
  return s;
}

TEST(StackGuard, DeepRecursionFailsWith54001) {
  int reached = 0;
  Status s = Recurse(0, &reached);
  EXPECT_EQ(s.sqlstate(), sqlstate::kStatementTooComplex);
  EXPECT_GT(reached, 1000);
}

}  // namespace
}  // namespace wattdb

namespace wattdb {
namespace {

// Records the thread that destroyed it.
struct Tracked {
  std::atomic<std::thread::id>* destroyed_by;
  explicit Tracked(std::atomic<std::thread::id>* d) : destroyed_by(d) {}
  Tracked(Tracked&& o) noexcept : destroyed_by(o.destroyed_by) { o.destroyed_by = nullptr; }
  ~Tracked() {
    if (destroyed_by) destroyed_by->store(std::this_thread::get_id());
  }
};

TEST(Reaper, DestroysDroppedObjectsOnItsOwnThreadAndTheRestWhenDestroyed) {
  std::atomic<std::thread::id> first{}, last{};
  {
    Reaper r;
    r.Drop(Tracked(&first));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (r.pending() > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    EXPECT_EQ(r.pending(), 0u);
    EXPECT_NE(first.load(), std::thread::id());
    EXPECT_NE(first.load(), std::this_thread::get_id());
    r.Drop(Tracked(&last));
  }
  EXPECT_NE(last.load(), std::thread::id());  // destroyed by the time the reaper is
}

// Polls `cond` until it holds or `ms` pass.
template <typename F>
bool Eventually(F cond, int ms = 10000) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (!cond()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Tasks that wait for one another all run at once (none queues behind a busy thread); a
// thread that finished a task takes the next one instead of a new thread starting.
TEST(ThreadCache, TasksNeverWaitForABusyThreadAndIdleThreadsAreReused) {
  ThreadCache cache(std::chrono::seconds(60));
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0, met = 0;
  constexpr int kTasks = 6;
  for (int i = 0; i < kTasks; i++) {
    cache.Run([&] {
      std::unique_lock<std::mutex> l(mu);
      arrived++;
      cv.notify_all();
      if (cv.wait_for(l, std::chrono::seconds(10), [&] { return arrived == kTasks; })) met++;
    });
  }
  ASSERT_TRUE(Eventually([&] { return cache.idle() == kTasks; }));
  {
    std::lock_guard<std::mutex> l(mu);
    EXPECT_EQ(met, kTasks);  // each saw all the others running
  }
  EXPECT_EQ(cache.started(), static_cast<uint64_t>(kTasks));
  std::atomic<int> ran{0};
  for (int round = 0; round < 50; round++) {
    cache.Run([&] { ran++; });
    ASSERT_TRUE(Eventually([&] { return ran == round + 1 && cache.idle() == kTasks; }));
  }
  EXPECT_EQ(cache.started(), static_cast<uint64_t>(kTasks));
  EXPECT_EQ(cache.threads(), static_cast<size_t>(kTasks));
}

// Idle threads exit after the timeout; the destructor waits for a running task.
TEST(ThreadCache, IdleThreadsExitAndDestructionWaitsForRunningTasks) {
  std::atomic<bool> finished{false};
  {
    ThreadCache cache(std::chrono::milliseconds(20));
    cache.Run([] {});
    ASSERT_TRUE(Eventually([&] { return cache.threads() == 0; }));
    EXPECT_EQ(cache.started(), 1u);
    cache.Run([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      finished = true;
    });
  }
  EXPECT_TRUE(finished);
}

// Copies of SharedBytes read the same buffer, which lives until the last copy goes (ASan
// builds check the lifetime); an empty one has no buffer.
TEST(SharedBytes, CopiesShareOneBufferThatOutlivesTheFirst) {
  SharedBytes empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.view(), "");
  EXPECT_TRUE(SharedBytes(std::string_view()).empty());
  std::string long_row(100, 'x');
  long_row[3] = '\0';  // bytes, not a C string
  auto first = std::make_unique<SharedBytes>(long_row);
  SharedBytes copy = *first;
  EXPECT_EQ(copy.view().data(), first->view().data()) << "one buffer";
  SharedBytes moved = std::move(copy);
  EXPECT_TRUE(copy.empty());  // NOLINT: moved-from is empty
  first.reset();
  EXPECT_EQ(moved.view(), long_row);
  EXPECT_EQ(moved.size(), 100u);
  SharedBytes assigned;
  assigned = moved;
  moved = SharedBytes("other");
  EXPECT_EQ(assigned.ToString(), long_row);
  EXPECT_EQ(moved.view(), "other");
  // Copied and dropped from several threads at once.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&assigned] {
      for (int i = 0; i < 10000; i++) {
        SharedBytes c = assigned;
        ASSERT_EQ(c.size(), 100u);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(assigned.view(), long_row);
}

}  // namespace
}  // namespace wattdb
