// PowerLossFs: a RocksDB FileSystem for tests that can lose what a power cut loses.
//
// It passes everything through to the real file system and remembers, per file written
// through it, how many bytes were synced and whether its directory entry was synced (the
// parent directory fsynced after the file was created or renamed into place). PowerOff()
// makes every later write, sync, rename and delete fail, as if the machine stopped;
// DropUnsyncedData() then cuts each file back to its synced length and removes files whose
// directory entry was never synced; PowerOn() lets the process reopen what is left. The
// same model as RocksDB's own fault-injection tests, kept to what our stores use.
// Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <rocksdb/file_system.h>

namespace wattdb::storage {

class PowerLossFs : public rocksdb::FileSystemWrapper {
 public:
  explicit PowerLossFs(std::shared_ptr<rocksdb::FileSystem> base = rocksdb::FileSystem::Default())
      : FileSystemWrapper(std::move(base)) {}
  static const char* kClassName() { return "PowerLossFs"; }
  const char* Name() const override { return kClassName(); }

  void PowerOff();
  void PowerOn();
  // While on, a file's sync fails (IOError) and its writes still go through: a disk that
  // takes data into its cache but cannot make it durable.
  void FailSyncs(bool on);
  // REQUIRES power off. Returns the number of files cut back or removed.
  int DropUnsyncedData();

  rocksdb::IOStatus NewWritableFile(const std::string& fname, const rocksdb::FileOptions& opts,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReopenWritableFile(const std::string& fname, const rocksdb::FileOptions& opts,
                                       std::unique_ptr<rocksdb::FSWritableFile>* result,
                                       rocksdb::IODebugContext* dbg) override;
  // A recycled log file (recycle_log_file_num): renamed, then written again from its start.
  // Only what is synced after the reuse survives a cut (the old tail is cut off with it).
  rocksdb::IOStatus ReuseWritableFile(const std::string& fname, const std::string& old_fname,
                                      const rocksdb::FileOptions& opts,
                                      std::unique_ptr<rocksdb::FSWritableFile>* result,
                                      rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewDirectory(const std::string& name, const rocksdb::IOOptions& opts,
                                 std::unique_ptr<rocksdb::FSDirectory>* result,
                                 rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus RenameFile(const std::string& src, const std::string& dst,
                               const rocksdb::IOOptions& opts,
                               rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus LinkFile(const std::string& src, const std::string& dst,
                             const rocksdb::IOOptions& opts, rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus DeleteFile(const std::string& fname, const rocksdb::IOOptions& opts,
                               rocksdb::IODebugContext* dbg) override;

  // Called by the wrappers.
  bool powered() const;
  bool syncs_fail() const;
  void Written(const std::string& fname, uint64_t size);
  void Synced(const std::string& fname);
  void DirSynced(const std::string& dir);

 private:
  struct FileState {
    uint64_t size = 0;          // bytes written through us
    uint64_t synced = 0;        // bytes known to be on disk
    bool entry_synced = false;  // the directory entry survives a power cut
  };
  mutable std::mutex mu_;
  bool powered_ = true;
  bool syncs_fail_ = false;
  std::map<std::string, FileState> files_;  // files written (or renamed) since we started
};

}  // namespace wattdb::storage
