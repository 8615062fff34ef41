// The fixture of the participant's tests (participant_test.cc, participant_recovery_test.cc):
// a store with segment 1 over every key, and a participant on it whose lock waits last 50 ms.
#pragma once

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/codec.h"
#include "node/participant.h"
#include "storage/segment_store.h"

namespace wattdb::node {

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
