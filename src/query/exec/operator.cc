#include "query/exec/operator.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "common/sqlstate.h"
#include "query/exec/aggregate.h"
#include "query/exec/eval.h"
#include "query/exec/eval_vector.h"
#include "query/exec/join.h"
#include "query/exec/operator_base.h"
#include "query/exec/row_hash.h"

namespace wattdb::exec {

using plan::AggFunc;
using plan::PlanNode;

namespace {

class ScanOp : public Operator {
 public:
  explicit ScanOp(const PlanNode& p) : p_(p) {}
  Status Open(ExecContext& ctx) override {
    ctx_ = &ctx;
    if (!ctx.scans) return Status::Internal("no scan provider");
    ASSIGN_OR_RETURN(src_, ctx.scans->OpenScan(p_));
    return Status::OK();
  }
  Result<bool> Next(Batch& out) override {
    RETURN_NOT_OK(CheckCancel(*ctx_));
    out.Reset(p_.types.size());
    return src_->Next(out);
  }
  void Close() override { src_.reset(); }

 private:
  const PlanNode& p_;
  ExecContext* ctx_ = nullptr;
  std::unique_ptr<RowSource> src_;
};

// Exchange, Partition and Gather: the rows of the subtree from the nodes, if the scan
// provider runs it there (the fragment on each segment; the parts of a partitioned join) or
// from its parts run on other threads (a Gather, when exchanges may read ahead), else run here.
class ExchangeOp : public UnaryOp {
 public:
  using UnaryOp::UnaryOp;
  Status Open(ExecContext& ctx) override {
    ctx_ = &ctx;
    if (ctx.scans) {
      ASSIGN_OR_RETURN(remote_, OpenRemote(ctx));
    }
    return remote_ ? Status::OK() : child_->Open(ctx);
  }
  Result<bool> Next(Batch& out) override {
    RETURN_NOT_OK(CheckCancel(*ctx_));
    if (!remote_) return child_->Next(out);
    out.Reset(p_.types.size());
    return remote_->Next(out);
  }
  void Close() override {
    if (remote_) {
      remote_.reset();
    } else {
      child_->Close();
    }
  }

 private:
  Result<std::unique_ptr<RowSource>> OpenRemote(ExecContext& ctx) {
    switch (p_.kind) {
      case PlanNode::Kind::kPartition:
        return ctx.scans->OpenPartition(p_, ctx);
      case PlanNode::Kind::kGather:
        if (!ctx.prefetch) return std::unique_ptr<RowSource>();
        return ctx.scans->OpenGather(p_, ctx);
      default:
        return ctx.scans->OpenExchange(p_, ctx);
    }
  }
  std::unique_ptr<RowSource> remote_;
};

// Offload: the subtree's rows from a helper node, else from the subtree run here. A helper
// that fails for want of a node or a link (not for an error of the query) before its first
// row gives way to the subtree run here.
class OffloadOp : public UnaryOp {
 public:
  using UnaryOp::UnaryOp;
  Status Open(ExecContext& ctx) override {
    ctx_ = &ctx;
    if (ctx.scans) {
      ASSIGN_OR_RETURN(remote_, ctx.scans->OpenOffload(p_, ctx));
    }
    return remote_ ? Status::OK() : OpenHere();
  }
  Result<bool> Next(Batch& out) override {
    RETURN_NOT_OK(CheckCancel(*ctx_));
    if (remote_) {
      out.Reset(p_.types.size());
      auto more = remote_->Next(out);
      if (more.ok() || delivered_ || !IsHelperFailure(more.status())) {
        delivered_ = delivered_ || (more.ok() && *more);
        return more;
      }
      remote_.reset();
      RETURN_NOT_OK(OpenHere());
    }
    return child_->Next(out);
  }
  void Close() override {
    remote_.reset();
    if (here_) child_->Close();
  }

 private:
  Status OpenHere() {
    here_ = true;
    return child_->Open(*ctx_);
  }
  std::unique_ptr<RowSource> remote_;
  bool delivered_ = false;  // the helper's rows reached the consumer: no way back
  bool here_ = false;       // the subtree was opened here
};

class ValuesOp : public Operator {
 public:
  explicit ValuesOp(const PlanNode& p) : p_(p) {}
  Status Open(ExecContext&) override {
    next_ = 0;
    return Status::OK();
  }
  Result<bool> Next(Batch& out) override {
    out.Reset(p_.types.size());
    while (next_ < p_.rows.size() && out.rows < kBatchRows) {
      std::vector<Value> row = p_.rows[next_++];
      out.AppendRow(std::move(row));
    }
    return out.rows > 0;
  }

 private:
  const PlanNode& p_;
  size_t next_ = 0;
};

// Integers from start to stop by step (PostgreSQL's generate_series for integers).
class GenerateSeriesOp : public Operator {
 public:
  explicit GenerateSeriesOp(const PlanNode& p) : p_(p) {}
  Status Open(ExecContext& ctx) override {
    Batch none;
    none.rows = 1;
    Value v[3];
    for (int i = 0; i < 3; i++) {
      ASSIGN_OR_RETURN(v[i], Eval(*p_.exprs[i], none, 0, &ctx));
    }
    done_ = v[0].is_null() || v[1].is_null() || v[2].is_null();
    if (done_) return Status::OK();
    next_ = v[0].as_int();
    stop_ = v[1].as_int();
    step_ = v[2].as_int();
    if (step_ == 0)
      return Status::Sql(sqlstate::kInvalidParameterValue, "step size cannot equal zero");
    return Status::OK();
  }
  Result<bool> Next(Batch& out) override {
    out.Reset(1);
    bool int32 = p_.types[0].id == TypeId::kInt32;
    while (!done_ && out.rows < kBatchRows && (step_ > 0 ? next_ <= stop_ : next_ >= stop_)) {
      out.cols[0].Append(int32 ? Value::Int32(static_cast<int64_t>(next_))
                               : Value::Int64(static_cast<int64_t>(next_)));
      out.rows++;
      next_ += step_;
    }
    return out.rows > 0;
  }

 private:
  const PlanNode& p_;
  bool done_ = false;
  __int128 next_ = 0, stop_ = 0, step_ = 1;
};

class UnnestOp : public Operator {
 public:
  explicit UnnestOp(const PlanNode& p) : p_(p) {}
  Status Open(ExecContext& ctx) override {
    Batch none;
    none.rows = 1;
    ASSIGN_OR_RETURN(array_, Eval(*p_.exprs[0], none, 0, &ctx));
    next_ = 0;
    return Status::OK();
  }
  Result<bool> Next(Batch& out) override {
    out.Reset(1);
    if (array_.is_null()) return false;
    const auto& elems = array_.as_array();
    while (next_ < elems.size() && out.rows < kBatchRows) {
      out.cols[0].Append(elems[next_++]);
      out.rows++;
    }
    return out.rows > 0;
  }

 private:
  const PlanNode& p_;
  Value array_;
  size_t next_ = 0;
};

class FilterOp : public UnaryOp {
 public:
  using UnaryOp::UnaryOp;
  Result<bool> Next(Batch& out) override {
    out.Reset(p_.types.size());
    while (true) {
      ASSIGN_OR_RETURN(bool more, child_->Next(in_));
      if (!more) return out.rows > 0;
      ASSIGN_OR_RETURN(size_t n, Select(*p_.predicate, in_, ctx_, &sel_));
      for (size_t c = 0; c < in_.cols.size(); c++) out.cols[c].Gather(in_.cols[c], sel_.data(), n);
      out.rows += n;
      if (out.rows > 0) return true;
    }
  }

 private:
  Batch in_;
  std::vector<uint32_t> sel_;
};

class ProjectOp : public UnaryOp {
 public:
  using UnaryOp::UnaryOp;
  Result<bool> Next(Batch& out) override {
    ASSIGN_OR_RETURN(bool more, child_->Next(in_));
    out.Reset(p_.exprs.size());
    if (!more) return false;
    for (size_t c = 0; c < p_.exprs.size(); c++) {
      RETURN_NOT_OK(EvalVector(*p_.exprs[c], in_, ctx_, &out.cols[c]));
    }
    out.rows = in_.rows;
    return true;
  }

 private:
  Batch in_;
};

// Sorts its input (stable: ties keep their input order). Rows stay in their typed batches,
// and so do their sort keys (evaluated once, kept in batches beside the rows'): comparisons
// read the typed arrays, boxing only keys of unlike types. With `top` > 0 (a LIMIT above
// it) only the first `top` rows are kept, in a bounded heap.
class SortOp : public UnaryOp {
 public:
  SortOp(const PlanNode& p, std::unique_ptr<Operator> child, size_t top)
      : UnaryOp(p, std::move(child)), top_(top) {}
  Result<bool> Next(Batch& out) override {
    if (!sorted_) RETURN_NOT_OK(Materialize());
    out.Reset(p_.types.size());
    while (emit_ < order_.size() && out.rows < kBatchRows) {
      const Entry& e = entries_[order_[emit_++]];
      out.AppendRowFrom(chunks_[e.chunk], e.row);
    }
    return out.rows > 0;
  }

 private:
  struct Entry {
    uint64_t seq;         // input order: the tie-breaker that makes the sort stable
    uint32_t chunk, row;  // the row in chunks_, its keys in key_chunks_
  };
  // Value::Compare of row ra of a and row rb of b, both non-NULL.
  static int CompareCells(const Vector& a, size_t ra, const Vector& b, size_t rb) {
    if (a.value_type() == b.value_type() && a.phys() == b.phys()) {
      switch (a.phys()) {
        case PhysType::kInt: {
          int64_t x = a.ints()[ra], y = b.ints()[rb];
          return x < y ? -1 : (x > y ? 1 : 0);
        }
        case PhysType::kDouble:
          return CompareDoubles(a.doubles()[ra], b.doubles()[rb]);
        case PhysType::kDecimal:
          return CompareDecimal(a.decimals()[ra], b.decimals()[rb]);
        case PhysType::kText: {
          int c = a.texts()[ra].compare(b.texts()[rb]);
          return c < 0 ? -1 : (c > 0 ? 1 : 0);
        }
        default:
          break;
      }
    }
    return a.GetValue(ra).Compare(b.GetValue(rb));
  }
  // Row ra of keys `a` against row rb of keys `b` in the sort's order: < 0 before, 0 a tie.
  template <typename KeyAt>
  int KeysCompare(KeyAt a, size_t ra, const Batch& b, size_t rb) const {
    for (size_t i = 0; i < p_.keys.size(); i++) {
      const Vector &x = a(i), &y = b.cols[i];
      bool xn = x.IsNull(ra), yn = y.IsNull(rb);
      if (xn || yn) {
        if (xn && yn) continue;
        return xn == p_.keys[i].nulls_first ? -1 : 1;
      }
      int c = CompareCells(x, ra, y, rb);
      if (c != 0) return p_.keys[i].desc ? -c : c;
    }
    return 0;
  }
  // a before b?
  bool Less(const Entry& a, const Entry& b) const {
    const Batch& ka = key_chunks_[a.chunk];
    int c = KeysCompare([&](size_t i) -> const Vector& { return ka.cols[i]; }, a.row,
                        key_chunks_[b.chunk], b.row);
    return c != 0 ? c < 0 : a.seq < b.seq;
  }
  // Row r of `keys`, as a new entry, before b (a new row's seq is above every kept one's)?
  bool RowLess(const std::vector<const Vector*>& keys, size_t r, const Entry& b) const {
    return KeysCompare([&](size_t i) -> const Vector& { return *keys[i]; }, r, key_chunks_[b.chunk],
                       b.row) < 0;
  }
  // What keeping row r of `keys` costs beyond its row.
  static size_t KeyBytes(const std::vector<const Vector*>& keys, size_t r) {
    size_t n = 0;
    for (const Vector* k : keys)
      n += 16 + (k->phys() == PhysType::kText && !k->IsNull(r) ? k->texts()[r].size() : 0);
    return n;
  }
  // Appends row r of `rows` and of `keys` to the last chunk (a new one if it is full).
  template <typename KeyAt>
  Entry Keep(std::vector<Batch>* chunks, std::vector<Batch>* key_chunks, const Batch& rows,
             KeyAt key, size_t r) {
    if (chunks->empty() || chunks->back().rows == kBatchRows) {
      chunks->emplace_back().Reset(p_.types.size());
      key_chunks->emplace_back().Reset(p_.keys.size());
    }
    chunks->back().AppendRowFrom(rows, r);
    Batch& k = key_chunks->back();
    for (size_t i = 0; i < p_.keys.size(); i++) k.cols[i].AppendFrom(key(i), r);
    k.rows++;
    return Entry{0, static_cast<uint32_t>(chunks->size() - 1),
                 static_cast<uint32_t>(chunks->back().rows - 1)};
  }
  Status Materialize() {
    sorted_ = true;
    auto less = [this](uint32_t a, uint32_t b) { return Less(entries_[a], entries_[b]); };
    std::vector<Vector> key_scratch(p_.keys.size());
    std::vector<const Vector*> keys(p_.keys.size());
    Batch in;
    uint64_t seq = 0;
    while (true) {
      RETURN_NOT_OK(CheckCancel(*ctx_));
      ASSIGN_OR_RETURN(bool more, child_->Next(in));
      if (!more) break;
      for (size_t k = 0; k < p_.keys.size(); k++) {
        ASSIGN_OR_RETURN(keys[k], EvalVectorRef(*p_.keys[k].expr, in, ctx_, &key_scratch[k]));
      }
      // Rows that enter the result (all of them without `top`) are copied into the last chunk.
      for (size_t r = 0; r < in.rows; r++, seq++) {
        if (top_ > 0 && order_.size() == top_) {
          if (!RowLess(keys, r, entries_[order_.front()]))
            continue;  // not better than the worst kept
          uint32_t worst = order_.front();
          std::pop_heap(order_.begin(), order_.end(), less);
          order_.pop_back();
          free_.push_back(worst);
        }
        Entry e = Keep(
            &chunks_, &key_chunks_, in, [&](size_t i) -> const Vector& { return *keys[i]; }, r);
        e.seq = seq;
        RETURN_NOT_OK(gauge_.Add(*ctx_, KeyBytes(keys, r) + sizeof(Entry) + 16 * p_.types.size()));
        uint32_t idx;
        if (!free_.empty()) {
          idx = free_.back();
          free_.pop_back();
          entries_[idx] = e;
        } else {
          idx = static_cast<uint32_t>(entries_.size());
          entries_.push_back(e);
        }
        order_.push_back(idx);
        if (top_ > 0) std::push_heap(order_.begin(), order_.end(), less);
      }
      // A top-N sort drops the chunks no kept row points into, now and then.
      if (top_ > 0 && chunks_.size() > 2 * (top_ / kBatchRows + 1) + 8) Compact();
    }
    std::sort(order_.begin(), order_.end(), less);
    return Status::OK();
  }
  // Copies the kept rows and their keys into fresh chunks (top-N only).
  void Compact() {
    std::vector<Batch> fresh, fresh_keys;
    for (uint32_t idx : order_) {
      Entry& e = entries_[idx];
      const Batch& keys = key_chunks_[e.chunk];
      Entry moved = Keep(
          &fresh, &fresh_keys, chunks_[e.chunk],
          [&](size_t i) -> const Vector& { return keys.cols[i]; }, e.row);
      e.chunk = moved.chunk;
      e.row = moved.row;
    }
    chunks_ = std::move(fresh);
    key_chunks_ = std::move(fresh_keys);
    gauge_.Reset();
  }

  size_t top_;
  bool sorted_ = false;
  MemoryGauge gauge_{"a sort"};
  std::vector<Batch> chunks_;
  std::vector<Batch> key_chunks_;  // the sort keys of chunks_'s rows, row for row
  std::vector<Entry> entries_;
  std::vector<uint32_t> order_;  // indexes into entries_ (a max-heap of the kept rows with `top`)
  std::vector<uint32_t> free_;   // entries_ slots of rows dropped from the heap
  size_t emit_ = 0;
};

class LimitOp : public UnaryOp {
 public:
  using UnaryOp::UnaryOp;
  Result<bool> Next(Batch& out) override {
    out.Reset(p_.types.size());
    while (true) {
      if (p_.limit >= 0 && emitted_ >= p_.limit) return false;
      ASSIGN_OR_RETURN(bool more, child_->Next(in_));
      if (!more) return false;
      for (size_t r = 0; r < in_.rows; r++) {
        if (skipped_ < p_.offset) {
          skipped_++;
          continue;
        }
        if (p_.limit >= 0 && emitted_ >= p_.limit) break;
        out.AppendRow(in_.Row(r));
        emitted_++;
      }
      if (out.rows > 0) return true;
    }
  }

 private:
  Batch in_;
  int64_t skipped_ = 0, emitted_ = 0;
};

// Wraps an operator to count its rows and time (EXPLAIN ANALYZE).
class InstrumentedOp : public Operator {
 public:
  InstrumentedOp(std::unique_ptr<Operator> inner, OperatorStats* stats)
      : inner_(std::move(inner)), stats_(stats) {}
  Status Open(ExecContext& ctx) override {
    auto t0 = std::chrono::steady_clock::now();
    Status s = inner_->Open(ctx);
    stats_->ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return s;
  }
  Result<bool> Next(Batch& out) override {
    auto t0 = std::chrono::steady_clock::now();
    auto r = inner_->Next(out);
    stats_->ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (r.ok() && *r) {
      stats_->rows += out.rows;
      stats_->batches++;
    }
    return r;
  }
  void Close() override { inner_->Close(); }

 private:
  std::unique_ptr<Operator> inner_;
  OperatorStats* stats_;  // borrowed; the stats map outlives the execution
};

Result<std::unique_ptr<Operator>> Build(const PlanNode& p,
                                        std::map<const PlanNode*, OperatorStats>* stats,
                                        size_t top = 0);

}  // namespace

Result<std::unique_ptr<Operator>> BuildOperator(const PlanNode& p) { return Build(p, nullptr); }

Result<std::unique_ptr<Operator>> BuildInstrumented(
    const PlanNode& p, std::map<const PlanNode*, OperatorStats>* stats) {
  return Build(p, stats);
}

namespace {

Result<std::unique_ptr<Operator>> BuildOne(const PlanNode& p, std::unique_ptr<Operator> child,
                                           std::unique_ptr<Operator> right, size_t top);

// `top` > 0: only the first `top` rows of p's output are wanted (p is a Sort under a Limit).
Result<std::unique_ptr<Operator>> Build(const PlanNode& p,
                                        std::map<const PlanNode*, OperatorStats>* stats,
                                        size_t top) {
  std::unique_ptr<Operator> child, right;
  if (!p.children.empty()) {
    size_t child_top = 0;
    if (p.kind == PlanNode::Kind::kLimit && p.limit >= 0 &&
        p.children[0]->kind == PlanNode::Kind::kSort && p.limit + p.offset < (int64_t{1} << 30)) {
      child_top = static_cast<size_t>(std::max<int64_t>(1, p.limit + p.offset));
    }
    ASSIGN_OR_RETURN(child, Build(*p.children[0], stats, child_top));
  }
  bool binary = p.kind == PlanNode::Kind::kHashJoin || p.kind == PlanNode::Kind::kNestedLoopJoin ||
                p.kind == PlanNode::Kind::kSetOp;
  if (binary) {
    if (p.children.size() != 2) return Status::Internal("binary plan node without two children");
    ASSIGN_OR_RETURN(right, Build(*p.children[1], stats));
  } else if (!child && p.kind != PlanNode::Kind::kScan && p.kind != PlanNode::Kind::kValues &&
             p.kind != PlanNode::Kind::kGenerateSeries && p.kind != PlanNode::Kind::kUnnest) {
    return Status::Internal("plan node without its child");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Operator> op,
                   BuildOne(p, std::move(child), std::move(right), top));
  if (!stats) return op;
  return std::unique_ptr<Operator>(new InstrumentedOp(std::move(op), &(*stats)[&p]));
}

Result<std::unique_ptr<Operator>> BuildOne(const PlanNode& p, std::unique_ptr<Operator> child,
                                           std::unique_ptr<Operator> right, size_t top) {
  switch (p.kind) {
    case PlanNode::Kind::kScan:
      return std::unique_ptr<Operator>(new ScanOp(p));
    case PlanNode::Kind::kValues:
      return std::unique_ptr<Operator>(new ValuesOp(p));
    case PlanNode::Kind::kFilter:
      return std::unique_ptr<Operator>(new FilterOp(p, std::move(child)));
    case PlanNode::Kind::kProject:
      return std::unique_ptr<Operator>(new ProjectOp(p, std::move(child)));
    case PlanNode::Kind::kAggregate:
      return MakeHashAggregate(p, std::move(child));
    case PlanNode::Kind::kExchange:
      return std::unique_ptr<Operator>(new ExchangeOp(p, std::move(child)));
    case PlanNode::Kind::kOffload:
      return std::unique_ptr<Operator>(new OffloadOp(p, std::move(child)));
    case PlanNode::Kind::kPartition:
    case PlanNode::Kind::kGather:
      return std::unique_ptr<Operator>(new ExchangeOp(p, std::move(child)));
    case PlanNode::Kind::kSort:
      return std::unique_ptr<Operator>(new SortOp(p, std::move(child), top));
    case PlanNode::Kind::kLimit:
      return std::unique_ptr<Operator>(new LimitOp(p, std::move(child)));
    case PlanNode::Kind::kHashJoin:
      return MakeHashJoin(p, std::move(child), std::move(right));
    case PlanNode::Kind::kNestedLoopJoin:
      return MakeNestedLoopJoin(p, std::move(child), std::move(right));
    case PlanNode::Kind::kSetOp:
      return MakeSetOp(p, std::move(child), std::move(right));
    case PlanNode::Kind::kIndexJoin:
      return MakeIndexJoin(p, std::move(child));
    case PlanNode::Kind::kGenerateSeries:
      return std::unique_ptr<Operator>(new GenerateSeriesOp(p));
    case PlanNode::Kind::kUnnest:
      return std::unique_ptr<Operator>(new UnnestOp(p));
  }
  return Status::Internal("unknown plan node");
}

}  // namespace

Status Execute(const PlanNode& plan, ExecContext& ctx, const std::function<Status(Batch&)>& sink,
               std::vector<OperatorStats>* stats) {
  std::map<const PlanNode*, OperatorStats> counters;
  ASSIGN_OR_RETURN(std::unique_ptr<Operator> op,
                   stats ? BuildInstrumented(plan, &counters) : BuildOperator(plan));
  RETURN_NOT_OK(op->Open(ctx));
  Batch b;
  Status st;
  while (true) {
    auto more = op->Next(b);
    if (!more.ok()) {
      st = more.status();
      break;
    }
    if (!*more) break;
    if (b.rows > 0) {
      st = sink(b);
      if (!st.ok()) break;
    }
  }
  op->Close();
  if (stats) {
    stats->clear();
    std::function<void(const PlanNode&)> walk = [&](const PlanNode& p) {
      stats->push_back(counters[&p]);
      for (const auto& c : p.children) walk(*c);
    };
    walk(plan);
  }
  return st;
}

}  // namespace wattdb::exec
