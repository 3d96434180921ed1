#!/usr/bin/env bash
# What a cached answer costs, against the floor: in ONE run of ONE server
# (loopback, wrk), cached `GET /standard` answers for the 200 five-piece FENs
# of bench/fens-5piece-200.txt against `GET /_bench/stored` with the same
# query strings, a trivial route (cargo feature `bench-routes`) that sends one
# stored answer through the same layers without parsing or looking anything
# up. The stored answer is the /standard answer of median size, so both send
# about as many bytes. 64 connections, then 1; ROUNDS rounds of DURATION
# seconds per route, alternating (ABBA), to share out the machine's noise;
# medians.
# Prints, for both, the server's CPU time per request (user + system, from
# /proc: the cost, and much steadier than req/s on a shared machine), req/s
# and p50/p99, then the cost ratio: hit CPU per request over the floor's
# (1.00: a hit costs nothing more than sending stored bytes).
#
#   scripts/bench-cache-hit.sh             # DURATION=3 ROUNDS=6: about 80 s
#   ACCEPT=application/cbor scripts/bench-cache-hit.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-3}
ROUNDS=${ROUNDS:-6}
PORT=${PORT:-9312}
ACCEPT=${ACCEPT:-application/json}
FENS=bench/fens-5piece-200.txt
command -v wrk >/dev/null || { echo "wrk not installed: apt-get install -y wrk" >&2; exit 1; }
cargo build --release --quiet --features bench-routes
source scripts/serve-shared.sh
start_tbserver "$PORT" 10000
base="http://127.0.0.1:$PORT"

enc() { sed -e 's/ /%20/g' <<<"$1"; }
# Every FEN once: each is answered (200) and cached; note each answer's size.
sizes=$(mktemp)
while read -r fen; do
  read -r code size < <(curl -s -o /dev/null -H "Accept: $ACCEPT" -w '%{http_code} %{size_download}\n' "$base/standard?fen=$(enc "$fen")")
  [ "$code" = 200 ] || { echo "/standard answered $code for $fen" >&2; exit 1; }
  printf '%s\t%s\n' "$size" "$fen" >> "$sizes"
done < "$FENS"
median_fen=$(sort -n "$sizes" | awk -F'\t' '{a[NR]=$2} END {print a[int((NR+1)/2)]}')
median_size=$(sort -n "$sizes" | awk -F'\t' '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
rm -f "$sizes"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Accept: $ACCEPT" "$base/_bench/stored?fen=$(enc "$median_fen")")
[ "$code" = 200 ] || { echo "/_bench/stored answered $code" >&2; exit 1; }
echo "accept=$ACCEPT; stored answer: $median_size bytes (median), for $median_fen"
# Warm the connections' code paths.
wrk -t1 -c1 -d1s -s bench/probe.lua "$base" -- "$FENS" /standard "$ACCEPT" >/dev/null

ticks() { awk '{print $14 + $15}' "/proc/$server/stat"; }
hz=$(getconf CLK_TCK)
run() { # conns route: wrk's RESULT line, plus the server's CPU per request
  local threads=$(( $1 < 2 ? 1 : 2 )) before after line
  before=$(ticks)
  line=$(wrk -t"$threads" -c"$1" -d"${DURATION}s" --timeout 5s -s bench/probe.lua "$base" -- "$FENS" "$2" "$ACCEPT" | grep '^RESULT')
  after=$(ticks)
  awk -v line="$line" -v ticks=$((after - before)) -v hz="$hz" \
    'BEGIN { match(line, /requests=[0-9]+/); n = substr(line, RSTART + 9, RLENGTH - 9); printf "%s cpu_us=%.2f\n", line, ticks * 1e6 / hz / n }'
}
field() { sed -e "s/.* $1=\([^ ]*\).*/\1/"; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for conns in 64 1; do
  results=$(mktemp)
  for round in $(seq "$ROUNDS"); do
    # ABBA: which route goes first alternates, so drift hits both alike.
    order="/standard /_bench/stored"; (( round % 2 )) || order="/_bench/stored /standard"
    for route in $order; do
      line=$(run "$conns" "$route")
      case "$line" in *errors_status=0*) ;; *) echo "non-2xx answers: $line" >&2; exit 1 ;; esac
      echo "$route $line" >> "$results"
    done
  done
  for route in /standard /_bench/stored; do
    rps=$(grep "^$route " "$results" | field rps | median)
    p50=$(grep "^$route " "$results" | field p50_ms | median)
    p99=$(grep "^$route " "$results" | field p99_ms | median)
    bytes=$(grep "^$route " "$results" | field bytes_per_request | median)
    cpu=$(grep "^$route " "$results" | field cpu_us | median)
    printf 'connections=%-3s %-15s cpu_us/request=%-6s req/s=%-7s p50_ms=%-7s p99_ms=%-7s bytes/response=%s\n' "$conns" "$route" "$cpu" "$rps" "$p50" "$p99" "$bytes"
    eval "rps_${route//[^a-z]/_}=$rps; p50_${route//[^a-z]/_}=$p50; cpu_${route//[^a-z]/_}=$cpu"
  done
  awk -v hit="$cpu__standard" -v floor="$cpu___bench_stored" -v r_hit="$rps__standard" -v r_floor="$rps___bench_stored" \
    -v p_hit="$p50__standard" -v p_floor="$p50___bench_stored" -v c="$conns" \
    'BEGIN { printf "connections=%-3s cost ratio hit/floor: CPU per request %.3f; req/s %.3f; p50 %.3f\n", c, hit / floor, r_floor / r_hit, p_hit / p_floor }'
  rm -f "$results"
done
