#include "storage/power_loss_fs.h"

#include <filesystem>

namespace wattdb::storage {

namespace fs = std::filesystem;
using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;

namespace {

std::string Normal(const std::string& path) {
  std::string p = fs::path(path).lexically_normal().string();
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

IOStatus Off() { return IOStatus::IOError("power is off"); }

class File : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  File(std::unique_ptr<rocksdb::FSWritableFile> f, PowerLossFs* owner, std::string name)
      : FSWritableFileOwnerWrapper(std::move(f)), owner_(owner), name_(std::move(name)) {}

  IOStatus Append(const rocksdb::Slice& data, const IOOptions& o, IODebugContext* dbg) override {
    if (!owner_->powered()) return Off();
    IOStatus s = target()->Append(data, o, dbg);
    if (s.ok()) owner_->Written(name_, data.size());
    return s;
  }
  IOStatus Append(const rocksdb::Slice& data, const IOOptions& o,
                  const rocksdb::DataVerificationInfo&, IODebugContext* dbg) override {
    return Append(data, o, dbg);
  }
  IOStatus PositionedAppend(const rocksdb::Slice&, uint64_t, const IOOptions&,
                            IODebugContext*) override {
    return IOStatus::NotSupported("positioned append");
  }
  IOStatus PositionedAppend(const rocksdb::Slice&, uint64_t, const IOOptions&,
                            const rocksdb::DataVerificationInfo&, IODebugContext*) override {
    return IOStatus::NotSupported("positioned append");
  }
  IOStatus Truncate(uint64_t size, const IOOptions& o, IODebugContext* dbg) override {
    return owner_->powered() ? target()->Truncate(size, o, dbg) : Off();
  }
  IOStatus Flush(const IOOptions& o, IODebugContext* dbg) override {
    return owner_->powered() ? target()->Flush(o, dbg) : Off();
  }
  IOStatus Sync(const IOOptions& o, IODebugContext* dbg) override {
    return Synced(target()->Sync(o, dbg));
  }
  IOStatus Fsync(const IOOptions& o, IODebugContext* dbg) override {
    return Synced(target()->Fsync(o, dbg));
  }
  IOStatus RangeSync(uint64_t, uint64_t, const IOOptions&, IODebugContext*) override {
    return IOStatus::OK();  // a hint, not a durability point
  }
  IOStatus Close(const IOOptions& o, IODebugContext* dbg) override {
    return target()->Close(o, dbg);
  }

 private:
  IOStatus Synced(IOStatus s) {
    if (!owner_->powered()) return Off();
    if (owner_->syncs_fail()) return IOStatus::IOError("sync failed (simulated)");
    if (s.ok()) owner_->Synced(name_);
    return s;
  }
  PowerLossFs* owner_;
  std::string name_;
};

class Dir : public rocksdb::FSDirectoryWrapper {
 public:
  Dir(std::unique_ptr<rocksdb::FSDirectory> d, PowerLossFs* owner, std::string name)
      : FSDirectoryWrapper(std::move(d)), owner_(owner), name_(std::move(name)) {}
  IOStatus Fsync(const IOOptions& o, IODebugContext* dbg) override {
    if (!owner_->powered()) return Off();
    IOStatus s = FSDirectoryWrapper::Fsync(o, dbg);
    if (s.ok()) owner_->DirSynced(name_);
    return s;
  }
  IOStatus FsyncWithDirOptions(const IOOptions& o, IODebugContext* dbg,
                               const rocksdb::DirFsyncOptions& d) override {
    if (!owner_->powered()) return Off();
    IOStatus s = FSDirectoryWrapper::FsyncWithDirOptions(o, dbg, d);
    if (s.ok()) owner_->DirSynced(name_);
    return s;
  }

 private:
  PowerLossFs* owner_;
  std::string name_;
};

}  // namespace

void PowerLossFs::PowerOff() {
  std::lock_guard<std::mutex> l(mu_);
  powered_ = false;
}

void PowerLossFs::PowerOn() {
  std::lock_guard<std::mutex> l(mu_);
  powered_ = true;
  files_.clear();  // what is left is on disk
}

bool PowerLossFs::powered() const {
  std::lock_guard<std::mutex> l(mu_);
  return powered_;
}

void PowerLossFs::FailSyncs(bool on) {
  std::lock_guard<std::mutex> l(mu_);
  syncs_fail_ = on;
}

bool PowerLossFs::syncs_fail() const {
  std::lock_guard<std::mutex> l(mu_);
  return syncs_fail_;
}

void PowerLossFs::Written(const std::string& fname, uint64_t size) {
  std::lock_guard<std::mutex> l(mu_);
  files_[fname].size += size;
}

void PowerLossFs::Synced(const std::string& fname) {
  std::lock_guard<std::mutex> l(mu_);
  auto& f = files_[fname];
  f.synced = f.size;
}

void PowerLossFs::DirSynced(const std::string& dir) {
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [name, f] : files_) {
    if (fs::path(name).parent_path().string() == dir) f.entry_synced = true;
  }
}

int PowerLossFs::DropUnsyncedData() {
  std::lock_guard<std::mutex> l(mu_);
  int changed = 0;
  for (const auto& [name, f] : files_) {
    std::error_code ec;
    if (!f.entry_synced) {
      if (fs::remove(name, ec)) changed++;
    } else if (f.synced < fs::file_size(name, ec) && !ec) {
      fs::resize_file(name, f.synced, ec);
      changed++;
    }
  }
  return changed;
}

IOStatus PowerLossFs::NewWritableFile(const std::string& fname, const rocksdb::FileOptions& opts,
                                      std::unique_ptr<rocksdb::FSWritableFile>* result,
                                      IODebugContext* dbg) {
  if (!powered()) return Off();
  std::unique_ptr<rocksdb::FSWritableFile> f;
  IOStatus s = target()->NewWritableFile(fname, opts, &f, dbg);
  if (!s.ok()) return s;
  std::string name = Normal(fname);
  {
    std::lock_guard<std::mutex> l(mu_);
    files_[name] = FileState{};  // created (or truncated): nothing of it is durable yet
  }
  *result = std::make_unique<File>(std::move(f), this, name);
  return s;
}

IOStatus PowerLossFs::ReopenWritableFile(const std::string& fname, const rocksdb::FileOptions& opts,
                                         std::unique_ptr<rocksdb::FSWritableFile>* result,
                                         IODebugContext* dbg) {
  if (!powered()) return Off();
  std::unique_ptr<rocksdb::FSWritableFile> f;
  IOStatus s = target()->ReopenWritableFile(fname, opts, &f, dbg);
  if (!s.ok()) return s;
  std::string name = Normal(fname);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!files_.count(name)) {  // existing contents are durable; its entry too
      std::error_code ec;
      uint64_t size = fs::file_size(name, ec);
      files_[name] = FileState{size, size, true};
    }
  }
  *result = std::make_unique<File>(std::move(f), this, name);
  return s;
}

IOStatus PowerLossFs::ReuseWritableFile(const std::string& fname, const std::string& old_fname,
                                        const rocksdb::FileOptions& opts,
                                        std::unique_ptr<rocksdb::FSWritableFile>* result,
                                        IODebugContext* dbg) {
  if (!powered()) return Off();
  std::unique_ptr<rocksdb::FSWritableFile> f;
  IOStatus s = target()->ReuseWritableFile(fname, old_fname, opts, &f, dbg);
  if (!s.ok()) return s;
  std::string name = Normal(fname);
  {
    std::lock_guard<std::mutex> l(mu_);
    files_.erase(Normal(old_fname));
    files_[name] = FileState{};  // written from its start; its new name needs its directory synced
  }
  *result = std::make_unique<File>(std::move(f), this, name);
  return s;
}

IOStatus PowerLossFs::NewDirectory(const std::string& name, const IOOptions& opts,
                                   std::unique_ptr<rocksdb::FSDirectory>* result,
                                   IODebugContext* dbg) {
  std::unique_ptr<rocksdb::FSDirectory> d;
  IOStatus s = target()->NewDirectory(name, opts, &d, dbg);
  if (s.ok()) *result = std::make_unique<Dir>(std::move(d), this, Normal(name));
  return s;
}

IOStatus PowerLossFs::RenameFile(const std::string& src, const std::string& dst,
                                 const IOOptions& opts, IODebugContext* dbg) {
  if (!powered()) return Off();
  IOStatus s = target()->RenameFile(src, dst, opts, dbg);
  if (!s.ok()) return s;
  std::lock_guard<std::mutex> l(mu_);
  std::string from = Normal(src), to = Normal(dst);
  auto it = files_.find(from);
  FileState st;
  if (it != files_.end()) {
    st = it->second;
    files_.erase(it);
  } else {
    std::error_code ec;
    st.size = st.synced = fs::file_size(to, ec);  // written outside this file system: on disk
  }
  st.entry_synced = false;  // the new name needs its directory synced
  files_[to] = st;
  return s;
}

IOStatus PowerLossFs::LinkFile(const std::string& src, const std::string& dst,
                               const IOOptions& opts, IODebugContext* dbg) {
  if (!powered()) return Off();
  IOStatus s = target()->LinkFile(src, dst, opts, dbg);
  if (!s.ok()) return s;
  std::lock_guard<std::mutex> l(mu_);
  std::string from = Normal(src), to = Normal(dst);
  FileState st;
  if (auto it = files_.find(from); it != files_.end()) {
    st = it->second;
  } else {
    std::error_code ec;
    st.size = st.synced = fs::file_size(to, ec);
  }
  st.entry_synced = false;
  files_[to] = st;
  return s;
}

IOStatus PowerLossFs::DeleteFile(const std::string& fname, const IOOptions& opts,
                                 IODebugContext* dbg) {
  if (!powered()) return Off();
  IOStatus s = target()->DeleteFile(fname, opts, dbg);
  if (s.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    files_.erase(Normal(fname));
  }
  return s;
}

}  // namespace wattdb::storage
