#!/usr/bin/env bash
# Load test of /api/v1/probe on loopback with wrk (Debian package `wrk`):
# full answers for a fixed list of 5-piece FENs, response cache off.
# Runs 1 connection (the baseline) then 64 connections, DURATION seconds each,
# and prints requests/s and p50/p99 latency for both.
#
#   scripts/load.sh            # DURATION=20, tables from ../shared/tables
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-20}
PORT=${PORT:-9311}
command -v wrk >/dev/null || { echo "wrk not installed: apt-get install -y wrk" >&2; exit 1; }
cargo build --release --quiet
source scripts/serve-shared.sh
start_tbserver "$PORT" 0
# Warm the page cache and open every table once.
wrk -t1 -c1 -d2s -s bench/probe.lua "http://127.0.0.1:$PORT" -- bench/fens-5piece.txt >/dev/null
for conns in 1 64; do
  threads=$(( conns < 2 ? 1 : 2 ))
  printf 'connections=%-3s ' "$conns"
  wrk -t"$threads" -c"$conns" -d"${DURATION}s" --timeout 5s -s bench/probe.lua "http://127.0.0.1:$PORT" -- bench/fens-5piece.txt | grep '^RESULT'
done
