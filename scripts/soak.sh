#!/usr/bin/env bash
# Soak: hours of mixed traffic against the release build on loopback
# (scripts/soak.py), with every source configured (Syzygy, Gaviota, chesstb,
# built-in tables read-only), the default client budget applied to loopback
# clients, an abuser, slow-head connections and a SIGHUP rescan every RELOAD
# seconds. Writes one CSV row per INTERVAL seconds: the server's resident
# memory (MiB, the median of samples taken every second), split into
# anonymous pages (the heap) and file pages (the memory-mapped tables, bounded
# by their size and reclaimable by the kernel), the allocator's live and
# resident bytes, the part of the heap that is decoded table blocks (bounded
# caches), the most open descriptors and threads seen, and the polite
# clients' requests, errors and p50/p99 (ms), the abuser's answers and the
# slow heads closed; the server's log goes to CSV.server.log. Exits non-zero
# when a polite request got anything but 200 or the server died.
#
#   scripts/soak.sh                       # HOURS=1 INTERVAL=60 RELOAD=300 SLOW=200 CSV=soak.csv
#   MINUTES=20 scripts/soak.sh            # a shorter run
#   BUILTIN_DIR=dir scripts/soak.sh       # built-in tables made ahead (default: the tests' own)
#   NO_BUILD=1 scripts/soak.sh           # the binary as built
#   PREFAULT=1 scripts/soak.sh           # prefault_tables = true
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TOTAL=$(( ${MINUTES:-$(( ${HOURS:-1} * 60 ))} * 60 ))
INTERVAL=${INTERVAL:-60}
RELOAD=${RELOAD:-300}
SLOW=${SLOW:-200}
CSV=${CSV:-soak.csv}
PORT=${PORT:-9315}
TARGET=${CARGO_TARGET_DIR:-target}
BUILTIN_DIR=${BUILTIN_DIR:-$TARGET/tmp/builtin-tables}
shared=${TBSERVER_SHARED_DIR:-../shared}
[ -d "$BUILTIN_DIR" ] || { echo "no built-in tables in $BUILTIN_DIR (cargo test --release --test builtin_vs_tables makes them)" >&2; exit 1; }
ulimit -n "$(ulimit -Hn)"
[ -n "${NO_BUILD:-}" ] || cargo build --release --quiet --bin tbserver
work=$(mktemp -d)
cat > "$work/soak.toml" <<CONF
listen = "127.0.0.1:$PORT"
syzygy = ["$shared/tables/syzygy"]
gaviota = ["$shared/tables/gaviota"]
chesstb = ["$shared/tables/chesstb"]
cache_entries = 10000
prefault_tables = $([ -n "${PREFAULT:-}" ] && echo true || echo false)
[builtin]
mode = "readonly"
dir = "$(realpath "$BUILTIN_DIR")"
[limits]
budget_exempt = []
CONF
# Three pieces (Gaviota, chesstb and every other source), four and five.
printf '%s\n' "8/8/8/4k3/8/8/8/KR6 w - - 0 1" "8/8/8/4k3/8/8/8/KQ6 b - - 0 1" "8/8/8/8/4k3/8/4P3/4K3 w - - 0 1" \
  "8/8/3k4/8/8/8/2N5/KN6 w - - 0 1" > "$work/fens-3piece.txt"
RUST_LOG=info "$TARGET/release/tbserver" serve --config "$work/soak.toml" > "$CSV.server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 300); do
  curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break
  kill -0 "$server" 2>/dev/null || { cat "$CSV.server.log" >&2; exit 1; }
  sleep 0.1
done
echo "soak: $((SECONDS_TOTAL / 60)) min, server $server, rows every $INTERVAL s into $CSV"
status=0
python3 scripts/soak.py "http://127.0.0.1:$PORT" "$server" "$CSV" "$SECONDS_TOTAL" "$INTERVAL" "$RELOAD" "$SLOW" \
  "$work/fens-3piece.txt" bench/fens-4piece.txt bench/fens-5piece.txt || status=$?
if ! kill -0 "$server" 2>/dev/null; then
  wait "$server" && code=0 || code=$?
  echo "the server exited early, status $code ($(kill -l "$code" 2>/dev/null || echo exit))" >&2
  status=1
fi
echo "server log ($CSV.server.log) lines with panic or error: $(grep -ci 'panic\|error' "$CSV.server.log" || true)"
exit $status
