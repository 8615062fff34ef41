// Single-row UPDATEs (and DELETEs) a node can run by itself. An UPDATE whose WHERE fixes every
// primary-key column to a constant, that sets no key column and whose expressions a node can
// evaluate (fragment.h NodeSafe) becomes a plan over the one row: Project(new row) over the bound
// source (Filter over Scan of the key). The row's owner runs it on the row the transaction
// sees and prepares the result (master/cluster/cluster_key_update.cc): one round trip
// instead of a scan and a prepare.
#pragma once

#include <optional>
#include <string>

#include "query/plan/binder.h"

namespace wattdb::plan {

struct KeyUpdate {
  std::string lo, hi;  // the key's range: [key, successor)
  PlanPtr plan;        // every column of the new row, in schema order
};

// The plan for `update` if it suits; nullopt otherwise (the master then scans and writes).
std::optional<KeyUpdate> PlanKeyUpdate(const BoundModify& update);
// The same for a DELETE whose WHERE fixes every primary-key column: the plan is the bound
// source (Filter over Scan of the key); the row it yields is deleted.
std::optional<KeyUpdate> PlanKeyDelete(const BoundModify& del);

// The same for a prepared statement's generic UPDATE or DELETE (one bound with $n in place,
// generic_plan.h) whose WHERE fixes each primary-key column to a parameter (`k = $n`): the
// plan keeps its parameters, so it is made (and serialized) once and each execution sends
// only its values (the node evaluates $n from them, exec::ExecContext::params).
struct KeyWriteTemplate {
  PlanPtr plan;                 // as KeyUpdate's, with its parameters unreplaced
  std::vector<int> key_params;  // per primary-key column, the parameter it equals
};
std::optional<KeyWriteTemplate> PlanKeyUpdateTemplate(const BoundModify& update);
std::optional<KeyWriteTemplate> PlanKeyDeleteTemplate(const BoundModify& del);
// The key range [lo, hi) one execution's `params` give to a template whose key column i
// equals parameter key_params[i], as KeyUpdate's; nullopt if a parameter is missing, NULL or
// not exactly a value of its key column's type (the general path then runs the statement).
std::optional<std::pair<std::string, std::string>> TemplateKeyRange(
    const std::vector<int>& key_params, const TableSchema& t, const std::vector<Value>& params);

// Point reads: a prepared SELECT's generic plan that is an Exchange over a fragment reading
// one key of `t` (an optional Project a node can evaluate over a Filter over the Scan of
// its rows, the filter fixing each key column to a parameter: `k = $n`) runs as it is, with
// the values in the execution's context and the key's range (TemplateKeyRange) given to the
// exchange, instead of being copied and filled in each time. Answers the parameter each key
// column equals; nullopt if the plan is of another shape or reads the statement's time.
std::optional<std::vector<int>> PlanPointReadTemplate(const PlanNode& plan, const TableSchema& t);

}  // namespace wattdb::plan
