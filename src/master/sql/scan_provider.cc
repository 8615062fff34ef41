#include "master/sql/scan_provider.h"

#include "common/codec.h"
#include "common/logging.h"
#include "master/cluster/index_scan.h"
#include "master/sql/partition_source.h"
#include "master/sql/system_views.h"
#include "query/exec/row_decode.h"
#include "rpc/exchange.h"
#include "rpc/gather.h"

namespace wattdb::master {

namespace {

// Streams rows already materialized in memory (system views).
class VectorSource : public exec::RowSource {
 public:
  explicit VectorSource(std::vector<std::vector<Value>> rows) : rows_(std::move(rows)) {}
  Result<bool> Next(exec::Batch& out) override {
    while (next_ < rows_.size() && out.rows < exec::kBatchRows)
      out.AppendRow(std::move(rows_[next_++]));
    return out.rows > 0;
  }

 private:
  std::vector<std::vector<Value>> rows_;
  size_t next_ = 0;
};

// The rows of a system view whose key (first column) lies in the scan's range: the planner
// narrows scans and index joins by key as for tables.
std::vector<std::vector<Value>> InKeyRange(std::vector<std::vector<Value>> rows,
                                           const plan::PlanNode& scan) {
  if (scan.lo.empty() && scan.hi.empty()) return rows;
  std::vector<std::vector<Value>> out;
  for (auto& r : rows) {
    if (r.empty() || r[0].is_null()) continue;
    std::string k;
    EncodeKeyValue(r[0], &k);
    if (k >= scan.lo && (scan.hi.empty() || k < scan.hi)) out.push_back(std::move(r));
  }
  return out;
}

class RemoteSource : public exec::RowSource {
 public:
  RemoteSource(Cluster& c, TableId table, std::string lo, std::string hi, Timestamp ts,
               uint64_t txn)
      : cluster_(c),
        table_(table),
        cursor_(std::move(lo)),
        hi_(std::move(hi)),
        ts_(ts),
        txn_(txn) {}

  Result<bool> Next(exec::Batch& out) override {
    int retries = 0;
    while (out.rows == 0) {
      if (!stream_) {
        if (done_ || (!hi_.empty() && cursor_ >= hi_)) return false;
        Status st = OpenNext();
        if (done_) return false;
        if (!st.ok()) {
          RETURN_NOT_OK(ScanRetryBackoff(st, &retries));
          continue;
        }
      }
      bool last = false;
      Status st = stream_->Next(&keys_, &rows_, &last);
      if (!st.ok()) {
        stream_.reset();
        RETURN_NOT_OK(ScanRetryBackoff(st, &retries));
        continue;
      }
      for (size_t i = 0; i < rows_.size(); i++)
        RETURN_NOT_OK(exec::AppendEncodedRow(rows_[i], &out));
      // Keys are prefix-free, so key + "\0" is the smallest key after it.
      if (!keys_.empty()) cursor_ = keys_.back() + std::string(1, '\0');
      if (last) {
        stream_.reset();
        if (seg_hi_.empty() || (!hi_.empty() && seg_hi_ >= hi_)) {
          done_ = true;
        } else {
          cursor_ = std::max(cursor_, seg_hi_);
        }
      }
    }
    return true;
  }

 private:
  // Opens a stream on the segment holding `cursor_`.
  Status OpenNext() {
    auto segs = cluster_.catalog().SegmentsOverlapping(table_, cursor_, hi_);
    if (segs.empty()) {
      done_ = true;
      return Status::OK();
    }
    const SegmentEntry& s = segs.front();
    auto [lo, hi] = rpc::WithinSegment(cursor_, hi_, s.lo, s.hi);
    ASSIGN_OR_RETURN(auto client, cluster_.registry().Client(s.node));
    ASSIGN_OR_RETURN(stream_, ScanStream::Open(*client, s.id, lo, hi, ts_, exec::kBatchRows, txn_));
    client_ = client;
    seg_hi_ = s.hi;
    return Status::OK();
  }

  Cluster& cluster_;
  TableId table_;
  std::string cursor_;  // next key to read (inclusive)
  std::string hi_;
  Timestamp ts_;
  uint64_t txn_;
  bool done_ = false;
  std::shared_ptr<NodeClient> client_;  // keeps the stream's client alive
  std::unique_ptr<ScanStream> stream_;
  std::string seg_hi_;
  std::vector<std::string> keys_, rows_;
};

}  // namespace

rpc::ExchangeOptions MasterScanProvider::ExchangeOptions(const exec::ExecContext& ctx) const {
  rpc::ExchangeOptions o;
  o.read_ts = read_ts_;
  o.txn = txn_;
  o.work_mem = ctx.work_mem;
  o.prefetch = ctx.prefetch;
  o.cancel = ctx.cancelled;
  o.stats = ctx.remote_stats;
  o.params = ctx.params;
  o.range = ctx.exchange_range;
  o.follower_reads = follower_reads_ && txn_ == 0;
  return o;
}

Result<std::unique_ptr<exec::RowSource>> MasterScanProvider::OpenExchange(
    const plan::PlanNode& exchange, const exec::ExecContext& ctx) {
  ASSIGN_OR_RETURN(auto x, rpc::ExchangeSource::Open(parts_, exchange, ExchangeOptions(ctx)));
  return std::unique_ptr<exec::RowSource>(std::move(x));
}

Result<std::unique_ptr<exec::RowSource>> MasterScanProvider::OpenGather(
    const plan::PlanNode& gather, const exec::ExecContext& ctx) {
  ASSIGN_OR_RETURN(auto g, rpc::GatherSource::Open(parts_, gather, ExchangeOptions(ctx), ctx));
  return std::unique_ptr<exec::RowSource>(std::move(g));
}

Result<std::unique_ptr<exec::RowSource>> MasterScanProvider::OpenOffload(
    const plan::PlanNode& offload, const exec::ExecContext& ctx) {
  OffloadSource::Options o;
  o.read_ts = read_ts_;
  o.txn = txn_;
  o.work_mem = ctx.work_mem;
  o.setting = offload_;
  o.cancel = ctx.cancelled;
  o.stats = ctx.remote_stats;
  ASSIGN_OR_RETURN(auto x, OffloadSource::Open(cluster_, offload, o));
  return std::unique_ptr<exec::RowSource>(std::move(x));
}

Result<std::unique_ptr<exec::RowSource>> MasterScanProvider::OpenPartition(
    const plan::PlanNode& partition, const exec::ExecContext& ctx) {
  ASSIGN_OR_RETURN(auto x, PartitionSource::Open(cluster_, partition, {read_ts_, txn_, &ctx}));
  return std::unique_ptr<exec::RowSource>(std::move(x));
}

Result<std::unique_ptr<exec::RowSource>> MasterScanProvider::OpenScan(const plan::PlanNode& scan) {
  if (scan.table < kFirstSystemTableId && scan.index) {
    return std::unique_ptr<exec::RowSource>(
        new IndexScanSource(cluster_.catalog(), cluster_.registry(), scan.table, scan.index,
                            scan.lo, scan.hi, read_ts_, scan.types.size(), txn_));
  }
  if (scan.table < kFirstSystemTableId) {
    return std::unique_ptr<exec::RowSource>(
        new RemoteSource(cluster_, scan.table, scan.lo, scan.hi, read_ts_, txn_));
  }
  if (IsPgCatalogTable(scan.table)) {
    ASSIGN_OR_RETURN(auto rows, Pg().Rows(scan.table));
    return std::unique_ptr<exec::RowSource>(new VectorSource(InKeyRange(std::move(rows), scan)));
  }
  ASSIGN_OR_RETURN(auto rows, SystemViewRows(scan.table, cluster_, energy_));
  return std::unique_ptr<exec::RowSource>(new VectorSource(InKeyRange(std::move(rows), scan)));
}

PgCatalog& MasterScanProvider::Pg() {
  if (!pg_) {
    if (!db_) default_db_ = std::make_unique<DatabaseCatalog>(cluster_.catalog(), kDefaultDatabase);
    pg_ = std::make_unique<PgCatalog>(db_ ? *db_ : *default_db_, cluster_);
  }
  return *pg_;
}

Result<Value> MasterScanProvider::CallCatalog(const std::string& name,
                                              const std::vector<Value>& args) {
  return Pg().Call(name, args);
}

}  // namespace wattdb::master
