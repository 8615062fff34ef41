#include "query/exec/join.h"

#include <functional>
#include <optional>
#include <unordered_map>

#include "common/codec.h"
#include "query/exec/eval.h"
#include "query/exec/hash_join.h"
#include "query/exec/operator_base.h"
#include "query/exec/row_hash.h"

namespace wattdb::exec {

using plan::PlanNode;

namespace {

// Reads every row of `op` into `rows`, calling `each` (if set) on each row in its batch first.
// The rows held count against work_mem (53200 past it).
Status Drain(Operator& op, const ExecContext& ctx, std::vector<std::vector<Value>>* rows,
             const std::function<Status(const Batch&, size_t)>& each = nullptr) {
  MemoryGauge gauge("a join or set operation's materialized input");
  return ForEachRow(op, ctx, [&](const Batch& b, size_t r) -> Status {
    if (each) RETURN_NOT_OK(each(b, r));
    rows->push_back(b.Row(r));
    return gauge.Add(ctx, RowBytes(rows->back()) + 16);
  });
}

// Shared by the joins: streams left (outer) batches, asks the subclass for the right rows
// that may match each left row, checks the residual predicate on the joined row, and pads
// unmatched left rows with NULLs for a left join. Output = left columns, then right columns.
class JoinBase : public UnaryOp {
 public:
  using UnaryOp::UnaryOp;
  Result<bool> Next(Batch& out) override {
    if (!built_) {
      built_ = true;
      RETURN_NOT_OK(Build());
    }
    out.Reset(p_.types.size());
    size_t nleft = p_.children[0]->types.size();
    size_t nright = p_.types.size() - nleft;
    while (out.rows < kBatchRows) {
      if (lrow_ >= in_.rows) {
        RETURN_NOT_OK(CheckCancel(*ctx_));
        ASSIGN_OR_RETURN(bool more, child_->Next(in_));
        if (!more) break;
        lrow_ = 0;
        continue;
      }
      size_t r = lrow_++;
      ASSIGN_OR_RETURN(const std::vector<const std::vector<Value>*>* cands, Candidates(in_, r));
      bool matched = false;
      for (const auto* right : *cands) {
        if (p_.predicate) {
          joined_.Reset(nleft + nright);
          for (size_t c = 0; c < nleft; c++) joined_.cols[c].AppendFrom(in_.cols[c], r);
          for (size_t c = 0; c < nright; c++) joined_.cols[nleft + c].Append((*right)[c]);
          joined_.rows = 1;
          ASSIGN_OR_RETURN(Value ok, Eval(*p_.predicate, joined_, 0, ctx_));
          if (ok.is_null() || !ok.as_bool()) continue;
        }
        matched = true;
        for (size_t c = 0; c < nleft; c++) out.cols[c].AppendFrom(in_.cols[c], r);
        for (size_t c = 0; c < nright; c++) out.cols[nleft + c].Append((*right)[c]);
        out.rows++;
      }
      if (!matched && p_.join_type == PlanNode::JoinType::kLeft) {
        for (size_t c = 0; c < nleft; c++) out.cols[c].AppendFrom(in_.cols[c], r);
        for (size_t c = 0; c < nright; c++) out.cols[nleft + c].AppendNull();
        out.rows++;
      }
    }
    return out.rows > 0;
  }

 protected:
  virtual Status Build() { return Status::OK(); }
  // The right rows that may match left row `r` of `left`.
  virtual Result<const std::vector<const std::vector<Value>*>*> Candidates(const Batch& left,
                                                                           size_t r) = 0;

 private:
  bool built_ = false;
  Batch in_, joined_;
  size_t lrow_ = 0;
};

// A join whose right input is an operator, read once into memory by Build.
class MaterializedJoin : public JoinBase {
 public:
  MaterializedJoin(const PlanNode& p, std::unique_ptr<Operator> left,
                   std::unique_ptr<Operator> right)
      : JoinBase(p, std::move(left)), right_(std::move(right)) {}
  Status Open(ExecContext& ctx) override {
    RETURN_NOT_OK(JoinBase::Open(ctx));
    return right_->Open(ctx);
  }
  void Close() override {
    JoinBase::Close();
    right_->Close();
  }

 protected:
  std::unique_ptr<Operator> right_;
};

class HashJoinOp : public MaterializedJoin {
 public:
  using MaterializedJoin::MaterializedJoin;

 private:
  Status Build() override {
    // Keys are evaluated on the batches as they arrive; rows with a NULL key never match.
    std::vector<std::optional<std::vector<Value>>> keys;
    RETURN_NOT_OK(Drain(*right_, *ctx_, &rows_, [&](const Batch& b, size_t r) -> Status {
      std::vector<Value> key;
      for (const auto& k : p_.right_keys) {
        ASSIGN_OR_RETURN(Value v, Eval(*k, b, r, ctx_));
        if (v.is_null()) {
          keys.emplace_back();
          return Status::OK();
        }
        key.push_back(std::move(v));
      }
      keys.emplace_back(std::move(key));
      return Status::OK();
    }));
    for (size_t i = 0; i < rows_.size(); i++) {
      if (keys[i]) table_[std::move(*keys[i])].push_back(&rows_[i]);
    }
    return Status::OK();
  }
  Result<const std::vector<const std::vector<Value>*>*> Candidates(const Batch& left,
                                                                   size_t r) override {
    key_.clear();
    for (const auto& k : p_.left_keys) {
      ASSIGN_OR_RETURN(Value v, Eval(*k, left, r, ctx_));
      if (v.is_null()) return &empty_;
      key_.push_back(std::move(v));
    }
    auto it = table_.find(key_);
    return it == table_.end() ? &empty_ : &it->second;
  }

  std::vector<std::vector<Value>> rows_;
  std::unordered_map<std::vector<Value>, std::vector<const std::vector<Value>*>, RowHash, RowEq>
      table_;
  std::vector<Value> key_;
  const std::vector<const std::vector<Value>*> empty_{};
};

class NestedLoopJoinOp : public MaterializedJoin {
 public:
  using MaterializedJoin::MaterializedJoin;

 private:
  Status Build() override {
    RETURN_NOT_OK(Drain(*right_, *ctx_, &rows_));
    for (const auto& row : rows_) all_.push_back(&row);
    return Status::OK();
  }
  Result<const std::vector<const std::vector<Value>*>*> Candidates(const Batch&, size_t) override {
    return &all_;
  }

  std::vector<std::vector<Value>> rows_;
  std::vector<const std::vector<Value>*> all_;
};

// Looks up the inner rows of each outer row by key prefix: one ranged scan per outer row.
class IndexJoinOp : public JoinBase {
 public:
  IndexJoinOp(const PlanNode& p, std::unique_ptr<Operator> outer) : JoinBase(p, std::move(outer)) {
    size_t nleft = p.children[0]->types.size();
    scan_.kind = PlanNode::Kind::kScan;
    scan_.table = p.table;
    scan_.table_name = p.table_name;
    scan_.types.assign(p.types.begin() + static_cast<long>(nleft), p.types.end());
  }

 private:
  Result<const std::vector<const std::vector<Value>*>*> Candidates(const Batch& left,
                                                                   size_t r) override {
    rows_.clear();
    ptrs_.clear();
    std::string prefix;
    for (const auto& k : p_.left_keys) {
      ASSIGN_OR_RETURN(Value v, Eval(*k, left, r, ctx_));
      if (v.is_null()) return &ptrs_;  // a NULL key matches nothing
      EncodeKeyValue(v, &prefix);
    }
    scan_.lo = prefix;
    scan_.hi = PrefixSuccessor(prefix);
    ASSIGN_OR_RETURN(std::unique_ptr<RowSource> src, ctx_->scans->OpenScan(scan_));
    while (true) {
      inner_.Reset(scan_.types.size());
      ASSIGN_OR_RETURN(bool more, src->Next(inner_));
      if (!more) break;
      for (size_t i = 0; i < inner_.rows; i++) rows_.push_back(inner_.Row(i));
    }
    for (const auto& row : rows_) ptrs_.push_back(&row);
    return &ptrs_;
  }

  PlanNode scan_;  // the inner table's scan; its key range is set per outer row
  Batch inner_;
  std::vector<std::vector<Value>> rows_;  // the current outer row's inner rows
  std::vector<const std::vector<Value>*> ptrs_;
};

// UNION [ALL], EXCEPT [ALL], INTERSECT [ALL] with PostgreSQL's multiset rules: a row that
// appears m times on the left and n times on the right appears m+n (UNION ALL), max(m-n, 0)
// (EXCEPT ALL) or min(m, n) (INTERSECT ALL) times; without ALL, at most once.
class SetOpOp : public BinaryOp {
 public:
  using BinaryOp::BinaryOp;
  Result<bool> Next(Batch& out) override {
    out.Reset(p_.types.size());
    if (p_.set_op == PlanNode::SetOpType::kUnion && p_.set_all) {
      // Streams: left, then right.
      while (true) {
        RETURN_NOT_OK(CheckCancel(*ctx_));
        Operator& src = on_right_ ? *right_ : *left_;
        ASSIGN_OR_RETURN(bool more, src.Next(out));
        if (more) return true;
        if (on_right_) return false;
        on_right_ = true;
      }
    }
    if (!built_) {
      built_ = true;
      RETURN_NOT_OK(Build());
    }
    while (emit_ < result_.size() && out.rows < kBatchRows)
      out.AppendRow(std::move(result_[emit_++]));
    return out.rows > 0;
  }

 private:
  Status Build() {
    std::vector<std::vector<Value>> left, right;
    RETURN_NOT_OK(Drain(*left_, *ctx_, &left));
    RETURN_NOT_OK(Drain(*right_, *ctx_, &right));
    std::unordered_map<std::vector<Value>, int64_t, RowHash, RowEq> counts;  // right side
    if (p_.set_op == PlanNode::SetOpType::kUnion) {
      std::unordered_map<std::vector<Value>, bool, RowHash, RowEq> seen;
      for (auto* side : {&left, &right}) {
        for (auto& row : *side) {
          if (seen.emplace(row, true).second) result_.push_back(std::move(row));
        }
      }
      return Status::OK();
    }
    for (auto& row : right) counts[std::move(row)]++;
    std::unordered_map<std::vector<Value>, bool, RowHash, RowEq> emitted;
    bool except = p_.set_op == PlanNode::SetOpType::kExcept;
    for (auto& row : left) {
      auto it = counts.find(row);
      bool in_right = it != counts.end() && it->second > 0;
      if (p_.set_all) {
        // A left copy that meets a right copy: EXCEPT cancels both, INTERSECT keeps one.
        if (in_right) it->second--;
        if (except != in_right) result_.push_back(std::move(row));
        continue;
      }
      if ((except ? !in_right : in_right) && emitted.emplace(row, true).second) {
        result_.push_back(std::move(row));
      }
    }
    return Status::OK();
  }

  bool on_right_ = false, built_ = false;
  std::vector<std::vector<Value>> result_;
  size_t emit_ = 0;
};

}  // namespace

std::unique_ptr<Operator> MakeHashJoin(const PlanNode& p, std::unique_ptr<Operator> left,
                                       std::unique_ptr<Operator> right) {
  if (auto typed = MakeTypedHashJoin(p, left, right)) return typed;
  return std::make_unique<HashJoinOp>(p, std::move(left), std::move(right));
}

std::unique_ptr<Operator> MakeNestedLoopJoin(const PlanNode& p, std::unique_ptr<Operator> left,
                                             std::unique_ptr<Operator> right) {
  return std::make_unique<NestedLoopJoinOp>(p, std::move(left), std::move(right));
}

std::unique_ptr<Operator> MakeIndexJoin(const PlanNode& p, std::unique_ptr<Operator> outer) {
  return std::make_unique<IndexJoinOp>(p, std::move(outer));
}

std::unique_ptr<Operator> MakeSetOp(const PlanNode& p, std::unique_ptr<Operator> left,
                                    std::unique_ptr<Operator> right) {
  return std::make_unique<SetOpOp>(p, std::move(left), std::move(right));
}

}  // namespace wattdb::exec
