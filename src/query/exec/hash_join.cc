// Hash join on typed batches: the right (build) input stays in its column batches; a hash
// table maps an encoding of each row's key to its rows. Left batches probe a batch at a
// time: keys are evaluated as vectors, matches gathered into the output, and the residual
// predicate selected on the joined batch. Output follows the left input's order, each left
// row's matches in build order, as the row-at-a-time join gives them.
#include "query/exec/hash_join.h"

#include <cstring>
#include <unordered_map>

#include "query/exec/eval.h"
#include "query/exec/eval_vector.h"
#include "query/exec/key_encoding.h"
#include "query/exec/key_index.h"
#include "query/exec/operator_base.h"

namespace wattdb::exec {

using plan::PlanNode;

namespace {

size_t BatchBytes(const Batch& b) {
  size_t n = 64;
  for (const auto& c : b.cols) {
    n += c.size() * 17;
    if (c.phys() == PhysType::kDecimal) n += c.size() * 24;
    if (c.phys() == PhysType::kText) {
      for (size_t i = 0; i < c.size(); i++) n += c.texts()[i].size();
    }
    if (c.phys() == PhysType::kBoxed) {
      for (size_t i = 0; i < c.size(); i++) n += sizeof(Value) + c.boxed()[i].HeapBytes();
    }
  }
  return n;
}

class TypedHashJoinOp : public UnaryOp {
 public:
  TypedHashJoinOp(const PlanNode& p, std::unique_ptr<Operator> left,
                  std::unique_ptr<Operator> right, std::vector<Family> families)
      : UnaryOp(p, std::move(left)), right_(std::move(right)), families_(std::move(families)) {}
  Status Open(ExecContext& ctx) override {
    RETURN_NOT_OK(UnaryOp::Open(ctx));
    return right_->Open(ctx);
  }
  void Close() override {
    UnaryOp::Close();
    right_->Close();
  }

  Result<bool> Next(Batch& out) override {
    if (!built_) RETURN_NOT_OK(Build());
    size_t nleft = p_.children[0]->types.size(), nright = p_.types.size() - nleft;
    bool left_join = p_.join_type == PlanNode::JoinType::kLeft;
    while (true) {
      out.Reset(p_.types.size());
      if (lrow_ >= in_.rows) {
        RETURN_NOT_OK(CheckCancel(*ctx_));
        ASSIGN_OR_RETURN(bool more, child_->Next(in_));
        if (!more) return false;
        lrow_ = 0;
        for (size_t k = 0; k < keys_.size(); k++)
          RETURN_NOT_OK(EvalVector(*p_.left_keys[k], in_, ctx_, &keys_[k]));
      }
      // The candidate pairs of the next left rows, up to about a batch of them.
      left_sel_.clear();
      right_refs_.clear();
      size_t first = lrow_;
      for (; lrow_ < in_.rows && left_sel_.size() < kBatchRows; lrow_++) {
        ForEachMatch(lrow_, [&](const Ref& m) {
          left_sel_.push_back(static_cast<uint32_t>(lrow_));
          right_refs_.push_back(m);
        });
      }
      size_t last = lrow_;
      Batch& joined = joined_;
      joined.Reset(p_.types.size());
      for (size_t c = 0; c < nleft; c++)
        joined.cols[c].Gather(in_.cols[c], left_sel_.data(), left_sel_.size());
      for (size_t c = 0; c < nright; c++) {
        Vector& col = joined.cols[nleft + c];
        if (RightColumnEmpty(c)) {
          col.AppendNulls(right_refs_.size());
          continue;
        }
        // Runs of matches in one build chunk (a key-ordered build side gives long ones) are
        // gathered at once.
        for (size_t i = 0, end; i < right_refs_.size(); i = end) {
          uint32_t chunk = right_refs_[i].chunk;
          rows_.clear();
          for (end = i; end < right_refs_.size() && right_refs_[end].chunk == chunk; end++) {
            rows_.push_back(right_refs_[end].row);
          }
          col.Gather(chunks_[chunk].cols[c], rows_.data(), rows_.size());
        }
      }
      joined.rows = left_sel_.size();
      if (!p_.predicate && !left_join) {
        if (joined.rows == 0) continue;
        std::swap(out, joined);
        return true;
      }
      std::vector<uint32_t> keep;  // positions in `joined` that survive the predicate, ascending
      if (p_.predicate) {
        ASSIGN_OR_RETURN(size_t n, Select(*p_.predicate, joined, ctx_, &keep));
        keep.resize(n);
      } else {
        keep.resize(joined.rows);
        for (size_t i = 0; i < keep.size(); i++) keep[i] = static_cast<uint32_t>(i);
      }
      // Survivors in left order; a left join pads each left row that kept none.
      size_t idx = 0;
      for (size_t r = first; r < last; r++) {
        bool any = false;
        for (; idx < keep.size() && left_sel_[keep[idx]] == r; idx++) {
          out.AppendRowFrom(joined, keep[idx]);
          any = true;
        }
        if (!any && left_join) {
          for (size_t c = 0; c < nleft; c++) out.cols[c].AppendFrom(in_.cols[c], r);
          for (size_t c = 0; c < nright; c++) out.cols[nleft + c].AppendNull();
          out.rows++;
        }
      }
      if (out.rows > 0) return true;
    }
  }

 private:
  struct Ref {
    uint32_t chunk, row;
  };

  Status Build() {
    built_ = true;
    keys_.resize(p_.left_keys.size());
    int_keys_ =
        families_.size() == 1 && (families_[0] == Family::kInt || families_[0] == Family::kBool ||
                                  families_[0] == Family::kTimestamp);
    MemoryGauge gauge("a join or set operation's materialized input");
    std::vector<Vector> keys(p_.right_keys.size());
    Batch b;
    std::string enc;
    while (true) {
      RETURN_NOT_OK(CheckCancel(*ctx_));
      ASSIGN_OR_RETURN(bool more, right_->Next(b));
      if (!more) break;
      if (b.rows == 0) continue;
      for (size_t k = 0; k < keys.size(); k++)
        RETURN_NOT_OK(EvalVector(*p_.right_keys[k], b, ctx_, &keys[k]));
      auto chunk = static_cast<uint32_t>(chunks_.size());
      if (int_keys_ && keys[0].phys() != PhysType::kInt && keys[0].phys() != PhysType::kEmpty)
        ToStringKeys();
      if (int_keys_) {
        const Vector& k = keys[0];
        for (size_t r = 0; r < b.rows && k.phys() == PhysType::kInt; r++) {
          if (!k.IsNull(r)) AddIntRef(k.ints()[r], {chunk, static_cast<uint32_t>(r)});
        }
      }
      for (size_t r = 0; r < b.rows && !int_keys_; r++) {
        enc.clear();
        bool null = false;
        for (size_t k = 0; k < keys.size() && !null; k++)
          null = !PutKey(families_[k], keys[k], r, &enc);
        if (null) continue;
        table_[enc].push_back({chunk, static_cast<uint32_t>(r)});
      }
      RETURN_NOT_OK(gauge.Add(*ctx_, BatchBytes(b) + b.rows * 48));
      chunks_.push_back(std::move(b));
      b = Batch();
    }
    right_empty_.assign(p_.types.size() - p_.children[0]->types.size(), true);
    for (const Batch& c : chunks_) {
      for (size_t i = 0; i < right_empty_.size(); i++)
        right_empty_[i] = right_empty_[i] && c.cols[i].phys() == PhysType::kEmpty;
    }
    return Status::OK();
  }

  // Column c of the build side holds only NULLs (a column nobody reads, pruned below).
  bool RightColumnEmpty(size_t c) const { return c < right_empty_.size() && right_empty_[c]; }

  // Build row `ref` has integer key k: appended to k's chain (rows keep their build order).
  void AddIntRef(int64_t k, Ref ref) {
    auto i = static_cast<uint32_t>(int_refs_.size());
    int_refs_.push_back(ref);
    int_next_.push_back(kNone);
    if (uint32_t* key = int_index_.Find(k)) {
      int_next_[int_tail_[*key]] = i;
      int_tail_[*key] = i;
      return;
    }
    int_index_.Insert(k, static_cast<uint32_t>(int_head_.size()));
    int_head_.push_back(i);
    int_tail_.push_back(i);
    int_key_.push_back(k);
  }

  // The build keys so far, moved from the integer table to table_ (a key column that is not
  // BIGINT-like).
  void ToStringKeys() {
    int_keys_ = false;
    for (size_t key = 0; key < int_head_.size(); key++) {
      std::string enc(reinterpret_cast<const char*>(&int_key_[key]),
                      8);  // PutKey's encoding of an integer
      auto& refs = table_[enc];
      for (uint32_t i = int_head_[key]; i != kNone; i = int_next_[i]) refs.push_back(int_refs_[i]);
    }
    int_index_ = IntKeyIndex();
    int_head_.clear();
    int_tail_.clear();
    int_key_.clear();
    int_refs_.clear();
    int_next_.clear();
  }

  template <typename Fn>
  void ForEachIntMatch(int64_t k, Fn fn) {
    const uint32_t* key = int_index_.Find(k);
    if (!key) return;
    for (uint32_t i = int_head_[*key]; i != kNone; i = int_next_[i]) fn(int_refs_[i]);
  }

  // Calls fn for each build row matching left row r, in build order.
  template <typename Fn>
  void ForEachMatch(size_t r, Fn fn) {
    if (int_keys_ && keys_[0].phys() == PhysType::kInt) {
      if (!keys_[0].IsNull(r)) ForEachIntMatch(keys_[0].ints()[r], fn);
      return;
    }
    key_.clear();
    for (size_t k = 0; k < keys_.size(); k++) {
      if (!PutKey(families_[k], keys_[k], r, &key_)) return;
    }
    if (int_keys_) {  // a probe key of another physical type: equal only if encoded alike
      if (key_.size() != 8) return;
      int64_t v;
      std::memcpy(&v, key_.data(), 8);
      ForEachIntMatch(v, fn);
      return;
    }
    auto it = table_.find(key_);
    if (it == table_.end()) return;
    for (const Ref& m : it->second) fn(m);
  }

  std::unique_ptr<Operator> right_;
  std::vector<Family> families_;
  bool built_ = false;
  std::vector<Batch> chunks_;  // the build input as it came
  std::unordered_map<std::string, std::vector<Ref>> table_;
  // One integer-family key whose build values are all BIGINT-like: keyed by the integer, each
  // key's build rows a chain through int_next_ (one flat table, no allocation per key).
  static constexpr uint32_t kNone = UINT32_MAX;
  bool int_keys_ = false;
  IntKeyIndex int_index_;                      // key -> its number
  std::vector<uint32_t> int_head_, int_tail_;  // by key number: first and last of its chain
  std::vector<int64_t> int_key_;               // by key number
  std::vector<Ref> int_refs_;                  // build rows with integer keys, in build order
  std::vector<uint32_t> int_next_;             // by build row: the next of its key's chain
  std::vector<bool> right_empty_;
  Batch in_, joined_;
  std::vector<Vector> keys_;  // the left keys of in_
  size_t lrow_ = 0;
  std::vector<uint32_t> left_sel_;
  std::vector<Ref> right_refs_;
  std::vector<uint32_t> rows_;  // a run of right_refs_' rows in one chunk
  std::string key_;
};

}  // namespace

std::unique_ptr<Operator> MakeTypedHashJoin(const PlanNode& p, std::unique_ptr<Operator>& left,
                                            std::unique_ptr<Operator>& right) {
  std::vector<Family> families;
  for (size_t k = 0; k < p.left_keys.size(); k++) {
    Family f = FamilyOf(p.left_keys[k]->type.id);
    if (f == Family::kOther || f != FamilyOf(p.right_keys[k]->type.id)) return nullptr;
    families.push_back(f);
  }
  return std::make_unique<TypedHashJoinOp>(p, std::move(left), std::move(right),
                                           std::move(families));
}

}  // namespace wattdb::exec
