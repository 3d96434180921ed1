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
SHARED=${TBSERVER_SHARED_DIR:-../shared}
PORT=${PORT:-9312}
ulimit -n 4096 2>/dev/null || true
cargo build --release --quiet --bin tbserver --example load_mixed
config=$(mktemp)
cat > "$config" <<CONF
listen = "127.0.0.1:$PORT"
syzygy = ["$SHARED/tables/syzygy"]
gaviota = ["$SHARED/tables/gaviota"]
[builtin]
mode = "off"
CONF
RUST_LOG=warn ./target/release/tbserver serve --config "$config" &
server=$!
trap 'kill $server 2>/dev/null; rm -f "$config"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.1; done
./target/release/examples/load_mixed "http://127.0.0.1:$PORT" "$server" bench/fens-5piece.txt \
  "$DURATION" "$CONNECTIONS" "$RATE" "$SEARCHERS"
kill -0 "$server" || { echo "server died" >&2; exit 1; }
