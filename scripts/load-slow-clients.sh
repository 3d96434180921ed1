#!/usr/bin/env bash
# Slow and idle connections against the release build on loopback
# (scripts/load-slow-clients.py): SLOW connections that never finish their
# request head, reopened as soon as they are closed, beside a polite client
# probing on one kept-alive connection. Twice: with the server's descriptor
# limit as the system sets it, then with SERVER_NOFILE descriptors, fewer
# than the slow connections, so that the connection limit decides. Exits
# non-zero when a slow connection outlives the head limit by more than 1 s or
# a polite request fails, and, in the first run, when the polite p99 beside
# them is over twice its p99 alone.
#
#   scripts/load-slow-clients.sh        # SLOW=5000 DURATION=30 HEAD_TIMEOUT_S=10 SERVER_NOFILE=2048
set -euo pipefail
cd "$(dirname "$0")/.."
SLOW=${SLOW:-5000}
DURATION=${DURATION:-30}
HEAD_TIMEOUT_S=${HEAD_TIMEOUT_S:-10}
NOFILE=${SERVER_NOFILE:-2048}
PORT=${PORT:-9313}
# The slow connections are this shell's children: room for them.
ulimit -n "$(ulimit -Hn)"
cargo build --release --quiet --bin tbserver
source scripts/serve-shared.sh
limits="[limits]
head_timeout_ms = $((HEAD_TIMEOUT_S * 1000))"
run() {
  start_tbserver "$PORT" 10000 "$limits"
  local tables
  tables=$(curl -s "http://127.0.0.1:$PORT/prometheus" | awk '/^tbserver_tables\{/ {n += $2} END {print n}')
  echo "server descriptor limit: $(prlimit --pid "$server" --nofile --noheadings --output SOFT), tables: $tables"
  python3 scripts/load-slow-clients.py "http://127.0.0.1:$PORT" bench/fens-5piece.txt "$SLOW" "$HEAD_TIMEOUT_S" "$DURATION" "$1"
  kill -0 "$server" || { echo "server died" >&2; exit 1; }
  kill "$server"; wait "$server" 2>/dev/null || true
}
unset SERVER_NOFILE
run 1
SERVER_NOFILE=$NOFILE run 0
