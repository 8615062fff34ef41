// Parser, binder and operators, run against an in-memory table.
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "common/codec.h"
#include "common/sqlstate.h"
#include "common/stack_guard.h"
#include "query/exec/eval.h"
#include "query/exec/operator.h"
#include "query/mem_catalog_test_util.h"
#include "query/plan/binder.h"
#include "query/plan/fragment.h"
#include "query/plan/generic_plan.h"
#include "query/plan/key_update.h"
#include "query/plan/offload.h"
#include "query/plan/partition.h"
#include "query/sql/parser.h"

// AddressSanitizer, as GCC (__SANITIZE_ADDRESS__) and clang (__has_feature) announce it.
#if defined(__SANITIZE_ADDRESS__)
#define WATTDB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WATTDB_ASAN 1
#endif
#endif
#ifndef WATTDB_ASAN
#define WATTDB_ASAN 0
#endif

namespace wattdb {
namespace {

using test::Err;
using test::MemCatalog;
using test::RunSql;

TEST(Parser, SyntaxErrorsPointAtTheToken) {
  auto r = sql::Parse("SELECT id FROM t WHERE id = = 3");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().sqlstate(), sqlstate::kSyntaxError);
  EXPECT_EQ(r.status().position(), 29);
  EXPECT_NE(r.status().message().find("\"=\""), std::string::npos);
  auto end = sql::Parse("SELECT id FROM");
  EXPECT_NE(end.status().message().find("end of input"), std::string::npos);
  EXPECT_EQ(sql::Parse("SELECT 'abc").status().sqlstate(), sqlstate::kSyntaxError);
  EXPECT_EQ(sql::Parse("CREATE TABLE x (a date)").status().sqlstate(),
            sqlstate::kFeatureNotSupported);
  EXPECT_TRUE(sql::Parse("CREATE TABLE x (a numeric(10, 2), b decimal)").ok());
  EXPECT_EQ(sql::Parse("CREATE TABLE x (a numeric(3, 4))").status().sqlstate(),
            sqlstate::kInvalidParameterValue);
  EXPECT_EQ(sql::Parse("CREATE TABLE x (a blob)").status().sqlstate(), sqlstate::kUndefinedObject);
}

TEST(Parser, TableStorageParameters) {
  auto r = sql::Parse(
      "ALTER TABLE a SET (replicas = 3, fillfactor = 70); ALTER TABLE a RESET (replicas);"
      "ALTER TABLE a SET (fillfactor = 70); ALTER TABLE a RESET (fillfactor)");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ(std::get<sql::SetTableOptionsStmt>((*r)[0]).replicas, 3u);
  EXPECT_EQ(std::get<sql::SetTableOptionsStmt>((*r)[1]).replicas, 0u) << "RESET";
  EXPECT_FALSE(std::get<sql::SetTableOptionsStmt>((*r)[2]).replicas.has_value());
  EXPECT_FALSE(std::get<sql::SetTableOptionsStmt>((*r)[3]).replicas.has_value());
  auto bad = sql::Parse("ALTER TABLE a SET (replicas = 0)");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().sqlstate(), "22023");
  bad = sql::Parse("ALTER TABLE a SET SCHEMA s");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().sqlstate(), "0A000");
}

TEST(Parser, StatementsAndAdminCommands) {
  auto r = sql::Parse(
      "CREATE TABLE IF NOT EXISTS a (x INT PRIMARY KEY, y VARCHAR(10) NOT NULL) WITH "
      "(fillfactor=90);"
      "ALTER TABLE a MOVE SEGMENT 7 TO NODE 3; ALTER NODE 2 DRAIN; ALTER NODE 2 POWER OFF;"
      "INSERT INTO a (x, y) VALUES (1, 'o''k'), (2, NULL); ;");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 5u);
  auto& ct = std::get<sql::CreateTableStmt>((*r)[0]);
  EXPECT_EQ(ct.primary_key, std::vector<std::string>{"x"});
  EXPECT_EQ(ct.columns[1].type.max_len, 10);
  auto& mv = std::get<sql::MoveSegmentStmt>((*r)[1]);
  EXPECT_EQ(mv.segment, 7u);
  EXPECT_EQ(mv.node, 3u);
  EXPECT_EQ(std::get<sql::AlterNodeStmt>((*r)[3]).action, sql::AlterNodeStmt::Action::kPowerOff);
  auto& ins = std::get<sql::InsertStmt>((*r)[4]);
  EXPECT_EQ(ins.rows.size(), 2u);
  EXPECT_EQ(ins.rows[0][1]->value.as_text(), "o'k");
}

TEST(Select, FilterAggregateSortLimit) {
  MemCatalog cat;
  auto r = RunSql(cat,
                  "SELECT grp, count(*), sum(v), min(id), max(d), count(v) FROM t WHERE id <= 30 "
                  "GROUP BY grp ORDER BY grp DESC LIMIT 2");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // ids 1..30; v is NULL at 10, 20, 30 (in groups b, c, a).
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0], "c|10|270|2|7.25|9");
  EXPECT_EQ((*r)[1], "b|10|270|1|7|9");
  // Pruning: the scan range covers exactly ids <= 30.
  std::string hi;
  EncodeKeyValue(Value::Int32(30), &hi);
  EXPECT_EQ(cat.last_lo, "");
  EXPECT_EQ(cat.last_hi, PrefixSuccessor(hi));
}

// ORDER BY ... LIMIT keeps a bounded heap; its rows are the full sort's first rows, ties
// (many here: grp has three values, v is NULL in every tenth row) in the same input order.
TEST(Select, TopNAgreesWithTheFullSort) {
  MemCatalog cat;
  auto full = RunSql(cat, "SELECT id, grp, v FROM t ORDER BY grp DESC, v NULLS FIRST");
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  ASSERT_EQ(full->size(), 2500u);
  for (int limit : {1, 7, 1500, 3000}) {
    for (int offset : {0, 5}) {
      auto top = RunSql(
          cat, fmt::format(
                   "SELECT id, grp, v FROM t ORDER BY grp DESC, v NULLS FIRST LIMIT {} OFFSET {}",
                   limit, offset));
      ASSERT_TRUE(top.ok()) << top.status().ToString();
      std::vector<std::string> want(full->begin() + std::min<size_t>(offset, full->size()),
                                    full->begin() + std::min<size_t>(offset + limit, full->size()));
      EXPECT_EQ(*top, want) << "LIMIT " << limit << " OFFSET " << offset;
    }
  }
  auto ties = RunSql(cat, "SELECT id FROM t ORDER BY grp LIMIT 3");
  ASSERT_TRUE(ties.ok());
  EXPECT_EQ(*ties, (std::vector<std::string>{"3", "6", "9"}));  // input order among the ties
}

// A join on a key that is all of one table's primary key and leads the other's becomes one join
// per segment; the aggregation above it splits; each part's scans narrow to its key range.
TEST(Select, SingleRowUpdatesAndDeletesByKeyGetAPlanForTheRowsNode) {
  MemCatalog cat;
  // The plan for the rows' node of an UPDATE or DELETE, if it gets one.
  auto plan_of = [&](const std::string& q) -> std::optional<plan::KeyUpdate> {
    auto stmts = sql::Parse(q);
    EXPECT_TRUE(stmts.ok()) << q;
    if (!stmts.ok()) return std::nullopt;
    auto* del = std::get_if<sql::DeleteStmt>(&(*stmts)[0]);
    auto b = del ? plan::BindDelete(*del, cat)
                 : plan::BindUpdate(std::get<sql::UpdateStmt>((*stmts)[0]), cat);
    EXPECT_TRUE(b.ok()) << q << ": " << b.status().ToString();
    if (!b.ok()) return std::nullopt;
    return del ? plan::PlanKeyDelete(*b) : plan::PlanKeyUpdate(*b);
  };
  auto ku = plan_of("UPDATE t SET v = v + 1, grp = grp || '!' WHERE id = 5 AND d > 0");
  ASSERT_TRUE(ku.has_value());
  std::string key;
  EncodeKeyValue(Value::Int32(5), &key);
  EXPECT_EQ(ku->lo, key);
  EXPECT_EQ(ku->hi, PrefixSuccessor(key));
  // Shipped as a node gets it, run over the table: the new row of id 5, every column.
  std::string bytes;
  ku->plan->Serialize(&bytes);
  auto shipped = plan::PlanNode::Deserialize(bytes);
  ASSERT_TRUE(shipped.ok());
  std::vector<std::vector<Value>> out;
  exec::ExecContext ctx{&cat, nullptr};
  ASSERT_TRUE(exec::Execute(**shipped, ctx, [&](const exec::Batch& b) {
                for (size_t r = 0; r < b.rows; r++) out.push_back(b.Row(r));
                return Status::OK();
              }).ok());
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].size(), 5u);  // the whole new row
  EXPECT_EQ(out[0][0].ToText(), "5");
  EXPECT_EQ(out[0][1].ToText(), "c!");
  EXPECT_EQ(out[0][2].ToText(), "11");
  EXPECT_EQ(out[0][3].ToText(), "1.25");
  EXPECT_FALSE(plan_of("UPDATE t SET id = 6 WHERE id = 5").has_value())
      << "a key column moves the row";
  EXPECT_FALSE(plan_of("UPDATE t SET v = 1 WHERE id > 5").has_value()) << "not one key";
  EXPECT_FALSE(plan_of("UPDATE t SET v = 1 WHERE grp = 'a'").has_value()) << "not by key";
  EXPECT_FALSE(plan_of("UPDATE t SET v = 1").has_value());
  EXPECT_FALSE(plan_of("UPDATE t SET v = (SELECT max(v) FROM t) WHERE id = 5").has_value())
      << "needs the master";
  // DELETE: the filter over the key's scan, run as the node would.
  auto kd = plan_of("DELETE FROM t WHERE id = 9 AND v > 0");
  ASSERT_TRUE(kd.has_value());
  key.clear();
  EncodeKeyValue(Value::Int32(9), &key);
  EXPECT_EQ(kd->lo, key);
  size_t rows = 0;
  ASSERT_TRUE(exec::Execute(*kd->plan, ctx, [&](const exec::Batch& b) {
                rows += b.rows;
                return Status::OK();
              }).ok());
  EXPECT_EQ(rows, 1u);
  EXPECT_FALSE(plan_of("DELETE FROM t WHERE id < 9").has_value());
  EXPECT_FALSE(plan_of("DELETE FROM t").has_value());
}

// A prepared UPDATE or DELETE by key gets a plan that keeps its $n: made once, it gives each
// execution's key from the values, and runs with them as the plan filled with them would.
// A prepared SELECT's generic plan, once below an Exchange, runs as a point read if its
// fragment reads one key's row: Project (what a node evaluates) over Filter (`k = $n` for
// the key) over the table's Scan. Other shapes, or the statement's time, are filled in.
TEST(Select, PointReadTemplatesAreExchangesOverOneKeysRow) {
  MemCatalog cat;
  const TableSchema t = *cat.GetTable("t");
  auto key_params = [&](const std::string& q,
                        bool exchange = true) -> std::optional<std::vector<int>> {
    auto stmts = sql::Parse(q);
    EXPECT_TRUE(stmts.ok()) << q;
    if (!stmts.ok()) return std::nullopt;
    std::vector<SqlType> types(sql::MaxParamIndex(q), SqlType{TypeId::kNull});
    auto b = plan::BindSelect(std::get<sql::SelectStmt>((*stmts)[0]), cat, &types);
    EXPECT_TRUE(b.ok()) << q << ": " << b.status().ToString();
    if (!b.ok()) return std::nullopt;
    plan::PlanPtr p = std::move(b->plan);
    if (exchange) {
      auto x = std::make_unique<plan::PlanNode>();
      x->kind = plan::PlanNode::Kind::kExchange;
      x->types = p->types;
      x->children.push_back(std::move(p));
      p = std::move(x);
    }
    return plan::PlanPointReadTemplate(*p, t);
  };
  EXPECT_EQ(key_params("SELECT v, grp || $2 FROM t WHERE id = $1"), std::vector<int>{0});
  EXPECT_EQ(key_params("SELECT * FROM t WHERE d > $1 AND $2 = id"), std::vector<int>{1});
  EXPECT_FALSE(key_params("SELECT v FROM t WHERE id = $1", false)) << "not below an Exchange";
  EXPECT_FALSE(key_params("SELECT v FROM t WHERE id = $1 + 1")) << "the key is not a parameter";
  EXPECT_FALSE(key_params("SELECT v FROM t WHERE id = $1 OR id = $2"));
  EXPECT_FALSE(key_params("SELECT v FROM t WHERE grp = $1"));
  EXPECT_FALSE(key_params("SELECT count(*) FROM t WHERE id = $1")) << "an aggregate";
  EXPECT_FALSE(key_params("SELECT now(), v FROM t WHERE id = $1")) << "the statement's time";
}

TEST(Select, PreparedKeyWritesKeepTheirParametersAndTakeTheKeyFromTheValues) {
  MemCatalog cat;
  auto template_of = [&](const std::string& q) -> std::optional<plan::KeyWriteTemplate> {
    auto stmts = sql::Parse(q);
    EXPECT_TRUE(stmts.ok()) << q;
    if (!stmts.ok()) return std::nullopt;
    std::vector<SqlType> types(sql::MaxParamIndex(q),
                               SqlType{TypeId::kNull});  // inferred by the binder
    auto* del = std::get_if<sql::DeleteStmt>(&(*stmts)[0]);
    auto b = del ? plan::BindDelete(*del, cat, &types)
                 : plan::BindUpdate(std::get<sql::UpdateStmt>((*stmts)[0]), cat, &types);
    EXPECT_TRUE(b.ok()) << q << ": " << b.status().ToString();
    if (!b.ok()) return std::nullopt;
    return del ? plan::PlanKeyDeleteTemplate(*b) : plan::PlanKeyUpdateTemplate(*b);
  };
  auto run = [&](const plan::PlanNode& p, const std::vector<Value>& params) {
    std::vector<std::string> out;
    exec::ExecContext ctx{&cat, nullptr};
    ctx.params = &params;
    Status st = exec::Execute(p, ctx, [&](const exec::Batch& b) {
      for (size_t r = 0; r < b.rows; r++) {
        std::string row;
        for (const auto& v : b.Row(r)) row += (row.empty() ? "" : "|") + v.ToText();
        out.push_back(row);
      }
      return Status::OK();
    });
    if (!st.ok()) out.push_back("ERROR " + st.sqlstate());
    return out;
  };
  const TableSchema t = *cat.GetTable("t");
  auto kt = template_of("UPDATE t SET v = v + $3, grp = grp || $2 WHERE d > $4 AND id = $1");
  ASSERT_TRUE(kt.has_value());
  EXPECT_EQ(kt->key_params, std::vector<int>{0});
  std::string bytes;
  kt->plan->Serialize(&bytes);
  auto shipped = plan::PlanNode::Deserialize(bytes);
  ASSERT_TRUE(shipped.ok());
  EXPECT_NE((*shipped)->ToString().find("$3"), std::string::npos)
      << "the node's plan keeps its parameters";
  for (int id : {5, 6}) {
    std::vector<Value> params = {Value::Int32(id), Value::Text("!"), Value::Int64(100),
                                 Value::Double(1.0)};
    auto range = plan::TemplateKeyRange(kt->key_params, t, params);
    ASSERT_TRUE(range.has_value());
    std::string key;
    EncodeKeyValue(Value::Int32(id), &key);
    EXPECT_EQ(range->first, key);
    EXPECT_EQ(range->second, PrefixSuccessor(key));
    std::string want = fmt::format("{}|{}!|{}|{}|{}", id, id == 5 ? "c" : "a", id * 2 + 100,
                                   Value::Double(id / 4.0).ToText(), id * 37 % 1001 - 500);
    EXPECT_EQ(run(**shipped, params), std::vector<std::string>{want});
    params[3] = Value::Double(10.0);  // the filter's parameter fails the row
    EXPECT_TRUE(run(**shipped, params).empty());
  }
  EXPECT_EQ(run(**shipped, {Value::Int32(5)}), std::vector<std::string>{"ERROR 08P01"})
      << "a value missing";
  EXPECT_FALSE(plan::TemplateKeyRange(
      kt->key_params, t, {Value(), Value::Text("!"), Value::Int64(1), Value::Double(0)}))
      << "a NULL key: the general path";
  EXPECT_FALSE(plan::TemplateKeyRange(kt->key_params, t, {Value::Text("5")}))
      << "not a value of the key's type";
  EXPECT_FALSE(plan::TemplateKeyRange(kt->key_params, t, {})) << "no value";
  auto kd = template_of("DELETE FROM t WHERE $1 = id AND grp = $2");
  ASSERT_TRUE(kd.has_value());
  EXPECT_EQ(run(*kd->plan, {Value::Int32(7), Value::Text("b")}).size(), 1u);
  EXPECT_TRUE(run(*kd->plan, {Value::Int32(7), Value::Text("a")}).empty());
  // A filter of nothing but the key goes (the key's range holds that row alone); one with
  // more stays.
  auto only_key = template_of("UPDATE t SET v = v + 1 WHERE id = $1");
  ASSERT_TRUE(only_key.has_value());
  EXPECT_EQ(only_key->plan->ToString().find("Filter"), std::string::npos)
      << only_key->plan->ToString();
  EXPECT_NE(kt->plan->ToString().find("Filter"), std::string::npos);
  auto del_key = template_of("DELETE FROM t WHERE id = $1");
  ASSERT_TRUE(del_key.has_value());
  EXPECT_EQ(del_key->plan->kind, plan::PlanNode::Kind::kScan);
  EXPECT_NE(
      template_of("UPDATE t SET v = 1 WHERE id = $1 AND id = $2")->plan->ToString().find("Filter"),
      std::string::npos);
  EXPECT_FALSE(template_of("UPDATE t SET v = 1 WHERE id = $1 + 1").has_value())
      << "the key is not a parameter";
  EXPECT_FALSE(template_of("UPDATE t SET v = 1 WHERE id = $1 OR id = $2").has_value());
  EXPECT_FALSE(template_of("UPDATE t SET v = 1 WHERE id >= $1").has_value());
  EXPECT_FALSE(template_of("UPDATE t SET id = $2 WHERE id = $1").has_value())
      << "a key column moves the row";
  EXPECT_FALSE(template_of("UPDATE t SET grp = CAST(now() AS TEXT) WHERE id = $1").has_value())
      << "the statement's time stays on the master";
  EXPECT_FALSE(template_of("UPDATE t SET v = 1 WHERE id = $1 AND now() IS NOT NULL").has_value());
}

TEST(Select, CoLocatedJoinsSplitIntoKeyRangeParts) {
  plan::PartitionOptions po;
  po.key_columns = [](TableId id) { return id == 1 ? std::vector<int>{0} : std::vector<int>{}; };
  auto plan_of = [&](MemCatalog& cat, const std::string& q) -> Result<plan::PlanPtr> {
    ASSIGN_OR_RETURN(auto stmts, sql::Parse(q));
    ASSIGN_OR_RETURN(plan::BoundSelect b,
                     plan::BindSelect(std::get<sql::SelectStmt>(stmts[0]), cat));
    auto p =
        plan::PushDownFragments(std::move(b.plan), {[](const plan::PlanNode&) { return true; }});
    return plan::PartitionJoins(std::move(p), po);
  };
  MemCatalog cat;
  const char* q =
      "SELECT a.grp, count(*), sum(b.v) FROM t a JOIN t b ON a.id = b.id WHERE b.d > 10 GROUP BY "
      "a.grp ORDER BY 1";
  auto p = plan_of(cat, q);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  std::string text = (*p)->ToString();
  EXPECT_NE(text.find("FinalAggregate"), std::string::npos) << text;
  size_t at = text.find("Partition per segment of t on [#0]");
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_LT(at, text.find("PartialAggregate")) << text;
  EXPECT_LT(text.find("PartialAggregate"), text.find("HashJoin")) << text;
  // Run in place (this provider has no nodes): the answer of the plain join.
  auto whole = RunSql(cat, q);
  ASSERT_TRUE(whole.ok());
  std::vector<std::string> got;
  exec::ExecContext ctx{&cat, nullptr};
  ASSERT_TRUE(exec::Execute(**p, ctx, [&](const exec::Batch& b) {
                for (size_t r = 0; r < b.rows; r++) {
                  std::string s;
                  for (size_t c = 0; c < b.cols.size(); c++)
                    s += (c ? "|" : "") + b.Get(c, r).ToText();
                  got.push_back(s);
                }
                return Status::OK();
              }).ok());
  EXPECT_EQ(got, *whole);
  // The part of keys [100, 200): the partitioning side reads exactly that, the other side the
  // keys whose prefix lies in [100, 200] (its own key is the whole prefix).
  const plan::PlanNode* part = nullptr;
  std::function<void(const plan::PlanNode&)> find = [&](const plan::PlanNode& n) {
    if (n.kind == plan::PlanNode::Kind::kPartition) part = &n;
    for (const auto& c : n.children) find(*c);
  };
  find(**p);
  ASSERT_NE(part, nullptr);
  std::string lo, hi;
  EncodeKeyValue(Value::Int32(100), &lo);
  EncodeKeyValue(Value::Int32(200), &hi);
  auto sub = part->children[0]->Clone();
  ASSERT_TRUE(plan::NarrowToPart(*part, sub.get(), lo, hi));
  auto xs = plan::Exchanges(*sub);
  ASSERT_EQ(xs.size(), 2u);
  auto scan_of = [](const plan::PlanNode* n) {
    while (n->kind != plan::PlanNode::Kind::kScan) n = n->children[0].get();
    return n;
  };
  const plan::PlanNode* a = scan_of(xs[part->index]);
  const plan::PlanNode* b = scan_of(xs[1 - part->index]);
  EXPECT_EQ(a->lo, lo);
  EXPECT_EQ(a->hi, hi);
  EXPECT_EQ(b->lo, lo);
  EXPECT_EQ(b->hi, hi + std::string(1, '\0'));
  // Unbounded ends stay unbounded; a part outside the scan's own range is empty.
  sub = part->children[0]->Clone();
  ASSERT_TRUE(plan::NarrowToPart(*part, sub.get(), "", ""));
  EXPECT_EQ(scan_of(plan::Exchanges(*sub)[1 - part->index])->hi, "");
  // Not partitioned: a join on a non-key column, or a left join.
  for (const char* other : {"SELECT count(*) FROM t a JOIN t b ON a.v = b.id",
                            "SELECT count(*) FROM t a LEFT JOIN t b ON a.id = b.id"}) {
    auto o = plan_of(cat, other);
    ASSERT_TRUE(o.ok());
    EXPECT_EQ((*o)->ToString().find("Partition"), std::string::npos) << (*o)->ToString();
  }
}

// Hash joins on typed batches: keys of one family across widths (integer = bigint), a
// residual predicate, left joins padding unmatched rows, NULL keys matching nothing.
TEST(Select, HashJoinsOnTypedBatches) {
  MemCatalog cat;
  auto pairs =
      RunSql(cat,
             "SELECT count(*), sum(a.id) FROM t a JOIN t b ON a.grp = b.grp AND a.id < b.id "
             "WHERE a.id < 40 AND b.id < 40");
  ASSERT_TRUE(pairs.ok()) << pairs.status().ToString();
  int64_t sum = 0;  // a.id summed over the pairs, counted directly
  for (int a = 1; a < 40; a++) {
    for (int b = a + 1; b < 40; b++) sum += a % 3 == b % 3 ? a : 0;
  }
  EXPECT_EQ(*pairs, (std::vector<std::string>{fmt::format("234|{}", sum)}));
  auto left = RunSql(
      cat, "SELECT a.id, b.id FROM t a LEFT JOIN t b ON a.id = b.v WHERE a.id <= 6 ORDER BY 1, 2");
  ASSERT_TRUE(left.ok()) << left.status().ToString();
  EXPECT_EQ(*left, (std::vector<std::string>{"1|NULL", "2|1", "3|NULL", "4|2", "5|NULL", "6|3"}));
  auto nulls = RunSql(cat, "SELECT count(*) FROM t a JOIN t b ON a.v = b.v");
  ASSERT_TRUE(nulls.ok());
  EXPECT_EQ(*nulls, (std::vector<std::string>{"2250"}));  // 250 NULL v match nothing
}

TEST(Select, SameResultsAfterPlanRoundTrip) {
  MemCatalog cat;
  const char* q =
      "SELECT grp, avg(v) AS a, count(*) FROM t WHERE d > 10 AND grp IN ('a', 'b') "
      "GROUP BY grp HAVING count(*) > 5 ORDER BY a";
  auto direct = RunSql(cat, q);
  auto shipped = RunSql(cat, q, true);
  ASSERT_TRUE(direct.ok()) << direct.status().ToString();
  ASSERT_TRUE(shipped.ok()) << shipped.status().ToString();
  EXPECT_EQ(*direct, *shipped);
  EXPECT_EQ(direct->size(), 2u);
}

// A plan's encoding is made once and kept; a clone, which may be changed, makes its own.
TEST(Select, APlansEncodingIsKeptAndAClonesIsItsOwn) {
  MemCatalog cat;
  auto stmts = sql::Parse("SELECT v FROM t WHERE d > $1 ORDER BY v LIMIT 5");
  ASSERT_TRUE(stmts.ok());
  std::vector<SqlType> types(1, SqlType{TypeId::kNull});
  auto b = plan::BindSelect(std::get<sql::SelectStmt>((*stmts)[0]), cat, &types);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  std::string fresh;
  b->plan->Serialize(&fresh);
  const std::string& kept = b->plan->Encoded();
  EXPECT_EQ(kept, fresh);
  EXPECT_EQ(&b->plan->Encoded(), &kept) << "encoded again";
  plan::PlanPtr copy = b->plan->Clone();
  copy->limit = 7;
  std::string changed;
  copy->Serialize(&changed);
  EXPECT_NE(changed, fresh);
  EXPECT_EQ(copy->Encoded(), changed) << "the clone took its source's encoding";
  auto back = plan::PlanNode::Deserialize(kept);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ((*back)->ToString(), b->plan->ToString());
}

TEST(Select, ExpressionsFollowPostgres) {
  MemCatalog cat;
  auto r = RunSql(cat,
                  "SELECT 7 / 2, 7 % 3, -7 / 2, 1.5 * 2, 'a' || 1, NULL = 1, NULL IS NULL, "
                  "CASE WHEN 1 > 2 THEN 'x' ELSE 'y' END, coalesce(NULL, 3), 2 BETWEEN 1 AND 3, "
                  "'abc' LIKE 'a%', 3 IN (1, NULL), abs(-4), length('héllo')");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0], "3|1|-3|3.0|a1|NULL|t|y|3|t|t|NULL|4|5");
  auto e = RunSql(cat, "SELECT count(*), sum(v), avg(v) FROM t WHERE id < 0");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)[0], "0|NULL|NULL");
  auto o = RunSql(cat, "SELECT id FROM t ORDER BY v DESC NULLS LAST, id LIMIT 3 OFFSET 1");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(*o, (std::vector<std::string>{"2498", "2497", "2496"}));
  auto d = RunSql(cat, "SELECT DISTINCT grp FROM t ORDER BY 1");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, (std::vector<std::string>{"a", "b", "c"}));
}

// Left-deep chains are built without recursion, so nothing bounds their depth but their
// length: a chain of thousands of terms evaluates, one of a million fails with 54001, and
// neither overflows the stack (in the walkers after the parser, or in destroying the tree).
TEST(Select, LongExpressionChainsEvaluateOrFailWith54001) {
  // On a thread with a server's stack, as sessions run.
  SetDefaultThreadStackSize(kServerThreadStackBytes);
  std::thread([] {
    MemCatalog cat;
    auto chain = [](const char* op, int terms) {
      std::string sql = "SELECT 1";
      for (int i = 1; i < terms; i++) sql += std::string(" ") + op + " 1";
      return sql;
    };
#if WATTDB_ASAN
    constexpr int kTerms = 2000;  // AddressSanitizer's frames are several times larger
#else
    constexpr int kTerms = 9000;
#endif
    auto r = RunSql(cat, chain("+", kTerms));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ((*r)[0], std::to_string(kTerms));
    for (const char* op : {"+", "*", "AND", "OR", "||", "="}) {
      auto huge = RunSql(cat, chain(op, 1000000));
      EXPECT_EQ(huge.status().sqlstate(), sqlstate::kStatementTooComplex)
          << op << ": " << huge.status().ToString();
    }
    auto casts = RunSql(
        cat, "SELECT 1" + [] {
          std::string s;
          for (int i = 0; i < 200000; i++) s += "::int";
          return s;
        }());
    EXPECT_TRUE(casts.ok() || casts.status().sqlstate() == sqlstate::kStatementTooComplex)
        << casts.status().ToString();
  }).join();
  // Join trees are built the same way: at most 100 joins.
  std::string joins = "SELECT * FROM t a0";
  for (int i = 1; i <= 101; i++) joins += fmt::format(" JOIN t a{} ON true", i);
  EXPECT_EQ(sql::Parse(joins).status().sqlstate(), sqlstate::kStatementTooComplex);
  EXPECT_TRUE(sql::Parse(joins.substr(0, joins.rfind(" JOIN"))).ok());
}

TEST(Select, ErrorsCarrySqlState) {
  MemCatalog cat;
  EXPECT_EQ(Err(cat, "SELECT nope FROM t"), sqlstate::kUndefinedColumn);
  EXPECT_EQ(Err(cat, "SELECT * FROM missing"), sqlstate::kUndefinedTable);
  EXPECT_EQ(Err(cat, "SELECT grp, id FROM t GROUP BY grp"), sqlstate::kGroupingError);
  EXPECT_EQ(Err(cat, "SELECT id FROM t WHERE id"), sqlstate::kDatatypeMismatch);
  EXPECT_EQ(Err(cat, "SELECT id FROM t WHERE count(*) > 1"), sqlstate::kGroupingError);
  EXPECT_EQ(Err(cat, "SELECT 1 / 0"), sqlstate::kDivisionByZero);
  EXPECT_EQ(Err(cat, "SELECT 2147483647 + 1"), sqlstate::kNumericValueOutOfRange);
  EXPECT_EQ(Err(cat, "SELECT id FROM t WHERE grp = 1"), sqlstate::kUndefinedFunction);
  EXPECT_EQ(Err(cat, "SELECT id FROM t WHERE id = 'x'"), sqlstate::kInvalidTextRepresentation);
  EXPECT_EQ(Err(cat, "SELECT x.id FROM t"), sqlstate::kUndefinedTable);
}

TEST(Binder, KeyRangeIsConservative) {
  MemCatalog cat;
  for (const char* w : {"id = 5", "id > 5 AND id < 9", "5 < id", "id >= 2 AND id <= 2",
                        "id BETWEEN 3 AND 4", "id > 2147483647"}) {
    auto all = RunSql(cat, std::string("SELECT count(*) FROM t WHERE ") + w);
    ASSERT_TRUE(all.ok()) << w;
    // Every row satisfying the predicate lies inside the derived range.
    auto rows = RunSql(cat, std::string("SELECT id FROM t WHERE ") + w);
    for (const auto& id : *rows) {
      std::string k;
      EncodeKeyValue(Value::Int32(std::stoi(id)), &k);
      EXPECT_GE(k, cat.last_lo) << w;
      if (!cat.last_hi.empty()) {
        EXPECT_LT(k, cat.last_hi) << w;
      }
    }
  }
  auto none = RunSql(cat, "SELECT id FROM t WHERE id > 5 AND id < 3");
  EXPECT_TRUE(none->empty());
}

// Integer arithmetic of constants is folded, so it bounds the key range as a constant does;
// in a prepared plan, once its parameters are known. An overflow is not folded.
TEST(Binder, ConstantArithmeticBoundsTheKeyRange) {
  MemCatalog cat;
  ASSERT_TRUE(RunSql(cat, "SELECT id FROM t WHERE id BETWEEN 3 AND 4").ok());
  std::string lo = cat.last_lo, hi = cat.last_hi;
  ASSERT_FALSE(hi.empty());
  auto rows = RunSql(cat, "SELECT id FROM t WHERE id BETWEEN 1 + 2 AND 2 * 3 - -(-2)");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(*rows, (std::vector<std::string>{"3", "4"}));
  EXPECT_EQ(cat.last_lo, lo);
  EXPECT_EQ(cat.last_hi, hi);
  EXPECT_EQ(Err(cat, "SELECT id FROM t WHERE id < 2147483647 + 1"),
            sqlstate::kNumericValueOutOfRange);
  EXPECT_EQ(Err(cat, "SELECT 2147483647 * 2"), sqlstate::kNumericValueOutOfRange);

  auto stmts = sql::Parse("SELECT id FROM t WHERE id BETWEEN $1 AND $1 + 1");
  ASSERT_TRUE(stmts.ok());
  std::vector<SqlType> types(1);  // $1, its type inferred
  auto generic = plan::BindSelect(std::get<sql::SelectStmt>((*stmts)[0]), cat, &types);
  ASSERT_TRUE(generic.ok()) << generic.status().ToString();
  auto plan = plan::Instantiate(*generic->plan, {Value::Int32(3)}, cat);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const plan::PlanNode* scan = plan::LeafScan(**plan);
  ASSERT_NE(scan, nullptr);
  EXPECT_EQ(scan->lo, lo);
  EXPECT_EQ(scan->hi, hi);
}

}  // namespace
}  // namespace wattdb
