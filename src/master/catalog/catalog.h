// Catalog: tables, the partition map (table -> key-range segments -> owning node), node
// admin states, logged segment moves, and durable counters (ids, timestamps, row ids).
// Everything lives in a KvStore under the master's data directory and survives restarts.
//
// A table's segments tile its whole key space: sorted by `lo`, each segment's `hi` is the
// next one's `lo`, the first starts at "" (-inf) and the last ends at "" (+inf). A
// "partition" is the set of a table's segments owned by one node.
//
// Thread-safe: readers share a lock, mutations are exclusive and write through.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "common/schema.h"
#include "common/status.h"
#include "master/catalog/credentials.h"
#include "query/plan/binder.h"
#include "storage/kv_store.h"

namespace wattdb::master {

// A segment of the segment map: its key range and its replica set (docs/design/replication.md).
struct SegmentEntry {
  SegmentId id = 0;
  TableId table = 0;
  std::string lo, hi;
  NodeId node = 0;                // the leader: writes and (by default) reads go here
  std::vector<NodeId> followers;  // the other replicas, on nodes distinct from `node`
  // Grows with every change of (node, followers); a request of another epoch is refused.
  uint64_t epoch = 1;
  // Copies on sleeping nodes, out of the set: each holds the records of this epoch up to its
  // node's sleep, and catches up from the leader's kept records when it wakes. A new epoch
  // (another numbering) or a split leaves them behind (they are re-seeded).
  std::vector<NodeId> asleep;
};

enum class NodeAdminState : uint8_t { kActive = 0, kDraining = 1, kOff = 2, kSuspended = 3 };
const char* NodeAdminStateName(NodeAdminState s);

struct MoveIntent {
  SegmentId segment = 0;
  NodeId from = 0, to = 0;
};

// A split asked of `node`: segment `segment` keeps keys below the split key, `new_id`
// takes the rest.
struct SplitIntent {
  SegmentId segment = 0, new_id = 0;
  NodeId node = 0;
  uint32_t pieces = 1;  // cut into up to this many new segments: new_id, new_id + 1, ...
};

// First ids of system views; user tables get ids below this.
constexpr TableId kFirstSystemTableId = 0xFFFF0000u;

class Catalog : public plan::CatalogReader {
 public:
  static Result<std::unique_ptr<Catalog>> Open(const std::string& dir);

  // plan::CatalogReader. Also resolves system views registered with AddSystemView.
  Result<TableSchema> GetTable(const std::string& name) const override;
  // The same, and the schema_version() it is the table of.
  Result<TableSchema> GetTable(const std::string& name, uint64_t* version) const;
  std::vector<TableSchema> Tables() const;
  std::optional<TableSchema> TableById(TableId id) const;
  // True if table `id` has a unique secondary index (checked on every write: no copying).
  bool HasUniqueIndex(TableId id) const;
  std::vector<TableSchema> SystemViews() const;
  // True if `name` is a system view (wattdb_*, the pg_catalog views): shared by every database.
  bool IsSystemView(const std::string& name) const;
  std::optional<std::string> GetView(const std::string& name) const override;
  // Planner statistics: rows counted by the last ANALYZE.
  Status SetRowCount(TableId table, uint64_t rows);
  // Moves the table's row estimate by `delta` (rows inserted minus rows deleted by a
  // statement), in memory only: ANALYZE makes it exact and durable.
  void AdjustRowCount(TableId table, int64_t delta);
  double EstimateRows(const TableSchema& table) const override;
  // Counts changes to tables, indexes, views and databases: a plan bound at one value holds
  // while it is unchanged (prepared statements keep theirs).
  uint64_t schema_version() const { return schema_version_.load(); }
  // Databases besides the default one (namespaces of table and view names, "db/name").
  Status CreateDatabase(const std::string& name);
  // Removes the database and returns the segments of its tables (as DropTable does).
  Result<std::vector<SegmentEntry>> DropDatabase(const std::string& name);
  bool HasDatabase(const std::string& name) const;
  std::vector<std::string> Databases() const;  // besides the default one
  std::vector<std::string> UserNames() const;
  // Every view: catalog name -> defining query.
  std::map<std::string, std::string> Views() const;
  // Users with password verifiers (CREATE USER ... PASSWORD).
  Status PutUser(const auth::Credentials& c);
  Status DropUser(const std::string& name);
  std::optional<auth::Credentials> GetUser(const std::string& name) const;
  bool HasUser(const std::string& name) const;
  // Views: their query text and the relations it reads. A name is a table or a view, not both.
  Status CreateView(const std::string& name, const std::string& sql,
                    const std::vector<std::string>& reads, bool replace);
  Status DropView(const std::string& name);
  // Views that read `name` (table or view).
  std::vector<std::string> DependentViews(const std::string& name) const;
  void AddSystemView(TableSchema schema);  // REQUIRES: id >= kFirstSystemTableId

  // Creates the table and its single initial segment on `node`. Fails with 42P07 if a
  // table of that name exists. Fills in schema.id.
  Result<SegmentEntry> CreateTable(TableSchema* schema, NodeId node);
  // Removes the table and its segments from the catalog, returning the segments. The
  // segments stay listed in Trash() until ClearTrash confirms their nodes dropped them.
  Result<std::vector<SegmentEntry>> DropTable(const std::string& name);
  // Atomically drops table `name` (returning its segments, as DropTable) and renames table
  // `staged` to `name`.
  Result<std::vector<SegmentEntry>> ReplaceTable(const std::string& name,
                                                 const std::string& staged);
  // Stores a changed schema (indexes) of the existing table `schema.name` with the same id.
  Status UpdateTable(const TableSchema& schema);
  std::vector<SegmentEntry> Trash() const;
  Status ClearTrash(SegmentId seg);

  // Segments of `table` overlapping [lo, hi), in key order.
  std::vector<SegmentEntry> SegmentsOverlapping(TableId table, const std::string& lo,
                                                const std::string& hi) const;
  Result<SegmentEntry> SegmentForKey(TableId table, const std::string& key) const;
  Result<SegmentEntry> GetSegment(SegmentId id) const;
  // Whether segment e.id exists with e's owner, epoch and key range (a write's routing still
  // holds).
  bool SegmentIs(const SegmentEntry& e) const;
  std::vector<SegmentEntry> AllSegments() const;
  std::vector<SegmentEntry> SegmentsOnNode(NodeId node) const;

  // Splits: the intent is logged before the node is asked; ApplySplit (ApplySplits for a
  // cut into pieces) records the old segment's new range and the new segments and clears the
  // intent in one atomic write; ClearSplitIntent when the node did not split.
  Status LogSplitIntent(const SplitIntent& s);
  Status ClearSplitIntent(SegmentId seg);
  std::vector<SplitIntent> PendingSplits() const;
  Status ApplySplit(SegmentId seg, SegmentId new_id, const std::string& split_key);
  // The same for a cut into pieces: segment `first_new_id` + i takes [keys[i], keys[i + 1])
  // (the last one up to the old high key), `seg` keeps what lies below keys[0].
  Status ApplySplits(SegmentId seg, SegmentId first_new_id, const std::vector<std::string>& keys);
  // Moves: the intent is logged before any bytes move; SetOwner switches ownership and
  // clears the intent in one atomic write. A new owner is a new epoch; it is no longer a
  // follower if it was one.
  Status LogMoveIntent(const MoveIntent& m);
  Status ClearMoveIntent(SegmentId seg);
  Status SetOwner(SegmentId seg, NodeId node);
  // Makes `leader` and `followers` the segment's replica set (synced), in `epoch` (none: the
  // next one). The nodes must be distinct. Returns the entry as written. The epoch given may
  // be the current one when only followers leave and the leader stays (the leader's records
  // in flight stay valid at the followers that remain); it never goes back.
  Result<SegmentEntry> SetReplicas(SegmentId seg, NodeId leader, std::vector<NodeId> followers,
                                   std::optional<uint64_t> epoch = std::nullopt);
  // An asleep copy's changes (synced), in the same epoch. kSleep: a follower leaves the set
  // and sleeps; kWake: an asleep copy, caught up, follows again; kForget: an asleep copy is
  // given up (re-seeded later). NotFound if `node` is not a follower (kSleep) or asleep.
  enum class AsleepChange { kSleep, kWake, kForget };
  Result<SegmentEntry> SetAsleep(SegmentId seg, NodeId node, AsleepChange change);
  std::vector<MoveIntent> PendingMoves() const;
  // A segment record as the catalog stores it (docs/design/formats.md); for tests.
  static Result<SegmentEntry> DecodeSegmentForTest(const std::string& v) {
    return DecodeSegment(v);
  }

  // Commit decisions of transactions spanning several nodes: logged (synced) before any
  // participant is told to commit; erased once every participant acknowledged. Decision()
  // sees a decision once LogDecision returned: until then the transaction must stay known
  // as running (nobody resolves it).
  Status LogDecision(uint64_t txn, Timestamp commit_ts);
  Status EraseDecision(uint64_t txn);
  std::optional<Timestamp> Decision(uint64_t txn) const;

  NodeAdminState GetNodeState(NodeId node) const;
  Status SetNodeState(NodeId node, NodeAdminState s);

  // Durable counters, handed out in memory from persisted blocks: a restart may skip values
  // but never repeats one.
  Result<uint64_t> NextSegmentId();
  // The first of `n` consecutive fresh segment ids.
  Result<uint64_t> NextSegmentIds(uint64_t n);
  Result<uint64_t> NextRowId(TableId table);
  // The next value of serial column `column` of `table` (1, 2, ...; gaps after a restart).
  Result<uint64_t> NextSerial(TableId table, int column);
  // Timestamps: returns a value greater than every timestamp handed out before.
  Result<Timestamp> NextTimestamp();

 private:
  Catalog() = default;
  std::atomic<uint64_t> schema_version_{0};
  // Reads everything from the store (Open).
  Status Load();
  // User tables (system false) or system views (true).
  std::vector<TableSchema> TablesOf(bool system) const;
  // The first of `n` consecutive values of counter `name`, persisted `block` (or `n`) at a time.
  Result<uint64_t> NextFromCounter(const std::string& name, uint64_t block, uint64_t n = 1)
      REQUIRES(mu_);
  static std::string SegmentKey(SegmentId id);
  // Writes `ops` plus the removal of the tables' segments into the trash, atomically.
  Result<std::vector<SegmentEntry>> TrashSegments(const std::vector<TableId>& ids,
                                                  std::vector<storage::KvStore::Op> ops)
      REQUIRES(mu_);
  static std::string EncodeSegment(const SegmentEntry& e);
  static Result<SegmentEntry> DecodeSegment(const std::string& v);

  std::unique_ptr<storage::KvStore> kv_;
  mutable SharedMutex mu_;
  std::map<std::string, TableSchema> tables_ GUARDED_BY(mu_);
  // tables_ by id (entries of a std::map stay put): rebuilt by IndexTablesLocked after every
  // change of tables_.
  std::unordered_map<TableId, const TableSchema*> tables_by_id_ GUARDED_BY(mu_);
  void IndexTablesLocked() REQUIRES(mu_);
  struct View {
    std::string sql;
    std::vector<std::string> reads;
  };
  std::map<std::string, View> views_ GUARDED_BY(mu_);
  std::set<std::string> databases_ GUARDED_BY(mu_);
  std::map<TableId, uint64_t> row_counts_ GUARDED_BY(mu_);
  std::map<std::string, std::optional<auth::Credentials>> users_
      GUARDED_BY(mu_);  // nullopt: no password
  std::map<TableId, std::map<std::string, SegmentEntry>> by_table_
      GUARDED_BY(mu_);  // table -> lo -> segment
  std::map<SegmentId, std::pair<TableId, std::string>> seg_index_
      GUARDED_BY(mu_);  // id -> (table, lo)
  std::map<SegmentId, MoveIntent> moves_ GUARDED_BY(mu_);
  std::map<SegmentId, SplitIntent> splits_ GUARDED_BY(mu_);
  std::map<SegmentId, SegmentEntry> trash_ GUARDED_BY(mu_);
  std::map<uint64_t, Timestamp> decisions_ GUARDED_BY(mu_);
  std::map<NodeId, NodeAdminState> node_states_ GUARDED_BY(mu_);
  struct Counter {
    uint64_t next = 0, limit = 0;
  };
  std::map<std::string, Counter> counters_ GUARDED_BY(mu_);
};

}  // namespace wattdb::master
