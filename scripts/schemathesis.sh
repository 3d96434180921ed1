#!/usr/bin/env bash
# Fuzzes the running service against its own OpenAPI document with
# schemathesis (pip install schemathesis): every operation, every check.
# Starts target/release/tbserver on the shared tables with searches capped
# at 100 ms (the analyse endpoints are fuzzed like the others, only faster)
# and built-in tables off (a random legal 3-4 piece FEN would otherwise make
# the server generate a table for seconds).
#   scripts/schemathesis.sh [max examples per operation, default 50] [schemathesis options]
set -euo pipefail
cd "$(dirname "$0")/.."
examples=${1:-50}
port=${TBSERVER_FUZZ_PORT:-19200}
tables=${TBSERVER_TABLES:-../shared/tables}
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
# The query-length limit is raised: schemathesis's negative cases repeat a
# parameter until the query passes 2 KiB, and its checks count only certain
# statuses as a rejection, not 414 (documented on every operation, and tested
# in tests/api_limits.rs). With the limit out of the way, each endpoint's
# own validation answers those cases.
cat >"$work/fuzz.toml" <<TOML
[builtin]
mode = "off"
[limits]
max_query_bytes = 60000
[search]
max_movetime_ms = 100
default_movetime_ms = 100
TOML
target/release/tbserver serve --config "$work/fuzz.toml" --listen "127.0.0.1:$port" \
  --syzygy "$tables/syzygy" --gaviota "$tables/gaviota" 2>"$work/server.log" &
pid=$!
# Every check but positive_data_acceptance, which expects any request the
# schema allows to succeed: whether a FEN is a legal chess position cannot be
# expressed in JSON Schema, so schema-valid strings get (documented) 400/422.
# One worker: with two threads, hypothesis's lambda descriptions parse source
# with `ast` concurrently, and CPython 3.11 then fails now and then with
# "AST constructor recursion depth mismatch", reported against whatever
# operation was running. One worker is no slower on two cores.
schemathesis run "http://127.0.0.1:$port/api/openapi.json" \
  --wait-for-schema 20 --checks all --exclude-checks positive_data_acceptance \
  --max-examples "$examples" --seed 7 \
  --request-timeout 10 --workers 1 --report junit --report-dir "$work/report" "${@:2}"
