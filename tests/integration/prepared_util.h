// Helpers of the tests of prepared statements through libpq (extended_protocol_test.cc,
// generic_plans_test.cc).
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <libpq-fe.h>

namespace wattdb::testing {

// Runs prepared statement `name` with text parameters (nullptr = NULL); rows as "a|b" lines.
inline std::string ExecPrepared(PGconn* c, const char* name, std::vector<const char*> vals) {
  PGresult* r =
      PQexecPrepared(c, name, static_cast<int>(vals.size()), vals.data(), nullptr, nullptr, 0);
  std::string out;
  if (PQresultStatus(r) != PGRES_TUPLES_OK) {
    out = std::string("ERROR ") + PQresultErrorMessage(r);
  } else {
    for (int i = 0; i < PQntuples(r); i++) {
      for (int j = 0; j < PQnfields(r); j++)
        out += (j ? "|" : "") + std::string(PQgetvalue(r, i, j));
      out += "\n";
    }
  }
  PQclear(r);
  return out;
}

inline void Prepare(PGconn* c, const char* name, const char* sql) {
  PGresult* r = PQprepare(c, name, sql, 0, nullptr);
  ASSERT_EQ(PQresultStatus(r), PGRES_COMMAND_OK) << PQresultErrorMessage(r);
  PQclear(r);
}

// A prepared SELECT run again reuses its generic plan, filled with each execution's values
// (key ranges pruned per value, across segments on two nodes), and stays right after
// writes, DDL that replaces its table, an index, a planner setting and inside a block.
// Two nodes, small segments, and the master's metrics on `port`.

}  // namespace wattdb::testing
