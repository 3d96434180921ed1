#!/usr/bin/env bash
# A/B load test of /api/v1/probe with wrk (Debian package `wrk`): two running
# servers (e.g. two builds, each with its own tables and `cache_entries = 0`)
# answer the same FEN list, 1 connection, alternately A B A B ..., so that
# both see the same load on a shared machine. Prints each run's requests/s
# and p50/p99 latency, then per pair B's time per request over A's
# (A's requests/s over B's) and the median of those ratios.
#
#   scripts/load-ab.sh URL_A URL_B [FEN_FILE]   # FEN_FILE: bench/fens-4piece.txt
#   PAIRS=3 DURATION=15 CONNS=1 WARM=3 scripts/load-ab.sh http://127.0.0.1:9333 http://127.0.0.1:9335
set -euo pipefail
(($# >= 2)) || { sed -n '9,10s/^# *//p' "$0" >&2; exit 2; }
A=$1 B=$2 FENS=$(realpath "${3:-$(dirname "$0")/../bench/fens-4piece.txt}")
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-3} DURATION=${DURATION:-15} CONNS=${CONNS:-1} WARM=${WARM:-3}
command -v wrk >/dev/null || { echo "wrk not installed: apt-get install -y wrk" >&2; exit 1; }
run() { # URL SECONDS -> wrk's RESULT line
  wrk -t"$(( CONNS < 2 ? 1 : 2 ))" -c"$CONNS" -d"$2s" --timeout 5s -s bench/probe.lua "$1" -- "$FENS" | grep '^RESULT'
}
rps() { sed -E 's/.* rps=([0-9.]+).*/\1/' <<<"$1"; }
# Warm both: the page cache, every table opened, the block caches.
for url in "$A" "$B"; do run "$url" "$WARM" >/dev/null; done
echo "connections=$CONNS duration=${DURATION}s fens=$FENS loadavg: $(cut -d' ' -f1-3 /proc/loadavg)"
ratios=()
for pair in $(seq "$PAIRS"); do
  ra=$(run "$A" "$DURATION"); echo "pair $pair A $ra"
  rb=$(run "$B" "$DURATION"); echo "pair $pair B $rb"
  ratios+=("$(awk -v a="$(rps "$ra")" -v b="$(rps "$rb")" 'BEGIN { printf "%.3f", a / b }')")
  echo "pair $pair B/A time per request ${ratios[-1]}"
done
echo "ratios ${ratios[*]} median $(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ r[NR] = $1 } END { print (NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2) }')"
echo "loadavg after: $(cut -d' ' -f1-3 /proc/loadavg)"
