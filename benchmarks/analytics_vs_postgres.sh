#!/bin/bash
# Analytic queries on WattDB (1 and 3 nodes) next to PostgreSQL 15 on this machine: the same
# TPC-H-like lineitem + orders data loaded with COPY into each, a fixed set of queries run
# several times, answers compared, per-query best times and the ratio PostgreSQL / WattDB.
# Usage: benchmarks/analytics_vs_postgres.sh [--rows N] [--nodes 1,3] [--runs N] [--no-postgres]
# (--nodes 1m,3m: node 1 lives in the master process)
exec /usr/bin/python3 "$(dirname "$0")/analytics/run.py" "$@"
