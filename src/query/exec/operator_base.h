// Bases of the operators with one or two inputs: they keep the plan node, own the inputs, and
// open and close them. Internal to the exec folder.
#pragma once

#include <functional>
#include <memory>

#include "query/exec/operator.h"

namespace wattdb::exec {

// Pulls every batch of `op` (checking for cancellation between batches) and calls `fn` on
// each row.
inline Status ForEachRow(Operator& op, const ExecContext& ctx,
                         const std::function<Status(const Batch&, size_t)>& fn) {
  Batch b;
  while (true) {
    RETURN_NOT_OK(CheckCancel(ctx));
    ASSIGN_OR_RETURN(bool more, op.Next(b));
    if (!more) return Status::OK();
    for (size_t r = 0; r < b.rows; r++) RETURN_NOT_OK(fn(b, r));
  }
}

class UnaryOp : public Operator {
 public:
  UnaryOp(const plan::PlanNode& p, std::unique_ptr<Operator> child)
      : p_(p), child_(std::move(child)) {}
  Status Open(ExecContext& ctx) override {
    ctx_ = &ctx;
    return child_->Open(ctx);
  }
  void Close() override { child_->Close(); }

 protected:
  const plan::PlanNode& p_;
  std::unique_ptr<Operator> child_;
  ExecContext* ctx_ = nullptr;  // set by Open
};

class BinaryOp : public Operator {
 public:
  BinaryOp(const plan::PlanNode& p, std::unique_ptr<Operator> left, std::unique_ptr<Operator> right)
      : p_(p), left_(std::move(left)), right_(std::move(right)) {}
  Status Open(ExecContext& ctx) override {
    ctx_ = &ctx;
    RETURN_NOT_OK(left_->Open(ctx));
    return right_->Open(ctx);
  }
  void Close() override {
    left_->Close();
    right_->Close();
  }

 protected:
  const plan::PlanNode& p_;
  std::unique_ptr<Operator> left_, right_;
  ExecContext* ctx_ = nullptr;  // set by Open
};

}  // namespace wattdb::exec
