#include "storage/log_prefill_fs.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace wattdb::storage {

using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;

namespace {

bool IsLog(const std::string& fname) {
  return fname.size() > 4 && fname.compare(fname.size() - 4, 4, ".log") == 0;
}

// A log file written through RocksDB's own file object; `fd_` (a second descriptor of the same
// file) writes the zeros ahead of it.
class PrefilledLog : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  PrefilledLog(std::unique_ptr<rocksdb::FSWritableFile> target, int fd)
      : FSWritableFileOwnerWrapper(std::move(target)), fd_(fd) {}
  ~PrefilledLog() override { Release(); }

  IOStatus Append(const rocksdb::Slice& data, const IOOptions& o, IODebugContext* dbg) override {
    Reserve(size_ + data.size());
    return Appended(target()->Append(data, o, dbg), size_ + data.size());
  }
  IOStatus Append(const rocksdb::Slice& data, const IOOptions& o,
                  const rocksdb::DataVerificationInfo& v, IODebugContext* dbg) override {
    Reserve(size_ + data.size());
    return Appended(target()->Append(data, o, v, dbg), size_ + data.size());
  }
  IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset, const IOOptions& o,
                            IODebugContext* dbg) override {
    Reserve(offset + data.size());
    return Appended(target()->PositionedAppend(data, offset, o, dbg), offset + data.size());
  }
  IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset, const IOOptions& o,
                            const rocksdb::DataVerificationInfo& v, IODebugContext* dbg) override {
    Reserve(offset + data.size());
    return Appended(target()->PositionedAppend(data, offset, o, v, dbg), offset + data.size());
  }
  IOStatus Truncate(uint64_t size, const IOOptions& o, IODebugContext* dbg) override {
    IOStatus s = target()->Truncate(size, o, dbg);
    if (s.ok()) size_ = size;
    return s;
  }
  IOStatus Close(const IOOptions& o, IODebugContext* dbg) override {
    IOStatus s = target()->Close(o, dbg);
    Release();
    return s;
  }

 private:
  IOStatus Appended(IOStatus s, uint64_t end) {
    if (s.ok()) size_ = std::max(size_, end);
    return s;
  }
  // Zeros on disk up to at least `upto`, a chunk at a time. Best effort: if writing them
  // fails, the appends grow the file as they would without us.
  void Reserve(uint64_t upto) {
    static const std::string zeros(64 << 10, '\0');
    while (fd_ >= 0 && prefilled_ < upto) {
      uint64_t at = std::max(prefilled_, size_);
      wrote_ = true;
      for (uint64_t done = 0; done < LogPrefillFs::kPrefillBytes && fd_ >= 0;) {
        ssize_t n = ::pwrite(fd_, zeros.data(),
                             std::min<uint64_t>(zeros.size(), LogPrefillFs::kPrefillBytes - done),
                             static_cast<off_t>(at + done));
        if (n > 0) {
          done += static_cast<uint64_t>(n);
        } else if (n < 0 && errno != EINTR) {
          Release();
        }
      }
      prefilled_ = at + LogPrefillFs::kPrefillBytes;
    }
  }
  // Cuts the zeros past the appended bytes and closes our descriptor.
  void Release() {
    if (fd_ < 0) return;
    if (wrote_) (void)::ftruncate(fd_, static_cast<off_t>(size_));
    ::close(fd_);
    fd_ = -1;
  }

  int fd_;
  uint64_t size_ = 0;       // bytes appended (a new file starts empty)
  uint64_t prefilled_ = 0;  // zeros written up to here
  bool wrote_ = false;      // zeros were written (Release cuts them off)
};

}  // namespace

IOStatus LogPrefillFs::NewWritableFile(const std::string& fname, const rocksdb::FileOptions& opts,
                                       std::unique_ptr<rocksdb::FSWritableFile>* result,
                                       IODebugContext* dbg) {
  IOStatus s = target()->NewWritableFile(fname, opts, result, dbg);
  if (!s.ok() || !IsLog(fname) || opts.use_direct_writes || opts.use_mmap_writes) return s;
  int fd = ::open(fname.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return s;  // no prefill: the log grows as usual
  *result = std::make_unique<PrefilledLog>(std::move(*result), fd);
  return s;
}

rocksdb::Env* LogPrefillEnv() {
  static const std::unique_ptr<rocksdb::Env> env =
      rocksdb::NewCompositeEnv(std::make_shared<LogPrefillFs>());
  return env.get();
}

}  // namespace wattdb::storage
