#!/usr/bin/env bash
# Mixed-traffic load test on loopback (examples/load_mixed.rs): 256 paced
# connections for 60 s — probes, batches, mainlines, lichess endpoints,
# malformed requests — while 3 clients keep analyses (searches) running.
# Reports status counts per class, connection errors, probe p50/p99 while
# searching, and the server's resident memory every second. Exits non-zero
# on an unexpected answer, a connection error, or probe p99 >= 50 ms.
#
#   scripts/load-mixed.sh                    # DURATION=60 CONNECTIONS=256 RATE=2000
#   DURATION=15 scripts/load-mixed.sh         # the shorter CI run
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-60}
CONNECTIONS=${CONNECTIONS:-256}
RATE=${RATE:-2000}
SEARCHERS=${SEARCHERS:-3}
PORT=${PORT:-9312}
ulimit -n 4096 2>/dev/null || true
cargo build --release --quiet --bin tbserver --example load_mixed
source scripts/serve-shared.sh
# The response cache on, as deployed (10000 answers).
start_tbserver "$PORT" 10000
./target/release/examples/load_mixed "http://127.0.0.1:$PORT" "$server" bench/fens-5piece.txt \
  "$DURATION" "$CONNECTIONS" "$RATE" "$SEARCHERS"
kill -0 "$server" || { echo "server died" >&2; exit 1; }
