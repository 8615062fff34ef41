// The fixture of the participant's tests (participant_test.cc, participant_recovery_test.cc):
// a store with segment 1 over every key, and a participant on it whose lock waits last 50 ms.
#pragma once

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/codec.h"
#include "node/participant.h"
#include "storage/segment_store.h"

namespace wattdb::node {

// Holds the store's log syncs while Hold is on (each sync waits in the store's test hook
// until Release); Held waits until one is held.
class SyncGate {
 public:
  explicit SyncGate(storage::SegmentStore& store, bool hold = false) : store_(store), hold_(hold) {
    store_.set_before_log_sync_for_test([this] {
      std::unique_lock<std::mutex> l(m_);
      if (!hold_) return;
      held_++;
      cv_.notify_all();
      cv_.wait(l, [this] { return !hold_; });
    });
  }
  ~SyncGate() { store_.set_before_log_sync_for_test(nullptr); }  // callers have ended
  void Hold() {
    std::lock_guard<std::mutex> l(m_);
    hold_ = true;
  }
  bool Held(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> l(m_);
    return cv_.wait_for(l, timeout, [this] { return held_ > 0; });
  }
  void Release() {
    std::lock_guard<std::mutex> l(m_);
    released_ = true;
    hold_ = false;
    cv_.notify_all();
  }
  bool Released() {
    std::lock_guard<std::mutex> l(m_);
    return released_;
  }

 private:
  storage::SegmentStore& store_;
  std::mutex m_;
  std::condition_variable cv_;
  bool hold_, released_ = false;
  int held_ = 0;
};

class ParticipantTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / fmt::format("wattdb_part_{}", getpid());
    std::filesystem::remove_all(dir_);
    store_ = std::move(storage::SegmentStore::Open(dir_.string()).value());
    ASSERT_TRUE(store_->CreateSegment({1, 1, "", ""}).ok());
    p_ = std::make_unique<Participant>(*store_, std::chrono::milliseconds(50));
  }
  void TearDown() override {
    p_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  static TxnWrite W(int k, WriteCheck c, storage::VersionKind kind = storage::VersionKind::kPut) {
    TxnWrite w;
    EncodeKeyValue(Value::Int64(k), &w.op.key);
    w.op.segment = 1;
    w.op.kind = kind;
    EncodeRow({Value::Int64(k)}, &w.op.row);
    w.check = c;
    return w;
  }
  std::filesystem::path dir_;
  std::unique_ptr<storage::SegmentStore> store_;
  std::unique_ptr<Participant> p_;
};

}  // namespace wattdb::node
