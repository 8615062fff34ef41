// Tree walks of the parse tree that must not recurse (see Expr).
#include "query/sql/ast.h"

#include <algorithm>

namespace wattdb::sql {

namespace {

template <typename Fn>
void ForEachChild(Expr& e, Fn fn) {
  for (auto& a : e.args) {
    if (a) fn(a);
  }
  if (e.operand) fn(e.operand);
  if (e.else_expr) fn(e.else_expr);
}

}  // namespace

Expr::~Expr() {
  std::vector<ExprPtr> doomed;
  ForEachChild(*this, [&](ExprPtr& c) { doomed.push_back(std::move(c)); });
  while (!doomed.empty()) {
    ExprPtr e = std::move(doomed.back());
    doomed.pop_back();
    ForEachChild(*e, [&](ExprPtr& c) { doomed.push_back(std::move(c)); });
  }  // each node goes without children
}

int MeasureDepth(Expr& root) {
  if (root.depth > 0) return root.depth;
  // Post-order with an explicit stack: a node is measured once its children are.
  std::vector<Expr*> stack{&root};
  while (!stack.empty()) {
    Expr* e = stack.back();
    bool ready = true;
    ForEachChild(*e, [&](ExprPtr& c) {
      if (c->depth == 0) {
        stack.push_back(c.get());
        ready = false;
      }
    });
    if (!ready) continue;
    int d = 0;
    ForEachChild(*e, [&](ExprPtr& c) { d = std::max(d, c->depth); });
    e->depth = d + 1;
    stack.pop_back();
  }
  return root.depth;
}

}  // namespace wattdb::sql
