#!/usr/bin/env bash
# Time to the first answer on an empty built-in cache, for the slowest
# 4-piece endgames: a fresh server with built-in tables only (no files), one
# position asked as a client that honours Retry-After. Prints, per position,
# when the first answer came (503 generating with progress, or 200) and when
# the complete answer came. Loopback only.
#
#   scripts/first-answer.sh            # KPPvK, KPvKP, KRPvK
#   scripts/first-answer.sh 'FEN' ...  # others
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-9313}
cargo build --release --quiet --bin tbserver
fens=("$@")
((${#fens[@]})) || fens=("8/7P/4P3/8/7K/8/5k2/8 b - - 0 1" "8/3p4/1k5P/8/1K6/8/8/8 b - - 0 1" "8/8/8/8/3k4/8/3PK3/4R3 w - - 0 1")
now() { date +%s.%N; }
since() { awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.3f", a - b }'; }
for fen in "${fens[@]}"; do
  cache=$(mktemp -d)
  TBSERVER_BUILTIN_DIR="$cache" target/release/tbserver serve --listen "127.0.0.1:$PORT" >"$cache.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
  url="http://127.0.0.1:$PORT/api/v1/probe?fen=${fen// /_}"
  start=$(now); first=""; tries=0
  while :; do
    tries=$((tries + 1))
    status=$(curl -s -o "$cache.body" -D "$cache.headers" -w '%{http_code}' "$url")
    [ -n "$first" ] || first=$(since "$start")
    [ "$status" = 200 ] && ! grep -q '"pending"' "$cache.body" && break
    if [ "$status" != 200 ] && [ "$status" != 503 ]; then echo "unexpected $status: $(cat "$cache.body")" >&2; break; fi
    retry=$(tr -d '\r' <"$cache.headers" | awk -F': ' 'tolower($1)=="retry-after"{print $2}')
    sleep "${retry:-1}"
    (( tries < 1000 )) || { echo "no complete answer" >&2; break; }
  done
  complete=$(since "$start")
  material=$(grep -o '"material":"[^"]*"' "$cache.body" | head -1)
  printf '%-36s %s first answer after %5.2f s, complete after %6.2f s (%d requests)\n' "$fen" "$material" "$first" "$complete" "$tries"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rm -rf "$cache" "$cache".*
done
