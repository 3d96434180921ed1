#!/usr/bin/env bash
# tbserver against lila-tablebase (lichess's tablebase server), side by side
# on loopback: the same Syzygy tables (../shared/tables/syzygy, memory-mapped
# by both), the same 200 five-piece FENs (bench/fens-5piece-200.txt), wrk
# with bench/probe.lua. Builds nothing: give it both binaries (how to build
# lila-tablebase: docs/performance.md).
#
# Two passes, each with its own pair of servers:
#   cached    every FEN asked once first, so every timed request is a hit
#             (tbserver cache_entries = 10000, lila --cache 20000, its default)
#   uncached  no response cache (cache_entries = 0, lila --cache 0): every
#             request computes the full answer
# In each pass, at 64 connections and then at 1, ROUNDS rounds of DURATION
# seconds per target, the order of the targets rotating each round, so that
# the machine's drift hits all alike. Targets: lila's /standard, tbserver's
# /standard, and tbserver's own /api/v1/probe in JSON and in CBOR, from a
# server in the README's configuration (Syzygy plus the built-in tables,
# `lazy`, the 35 tables of up to 4 pieces on disk in BUILTIN_DIR, generated
# there first if missing); tb-standard-off is /standard from a second
# tbserver with the built-in tables off, for comparison.
# Prints per target the medians of: the server's CPU time per request (user +
# system from /proc/PID/stat over the run, divided by the answers: the cost,
# steadier than req/s on a shared machine), req/s, p50 and p99; then each
# tbserver target's ratio against lila's /standard: CPU per request
# (lila ÷ tbserver, above 1: tbserver cheaper), req/s and p50.
#
#   LILA_TABLEBASE=/path/to/lila-tablebase scripts/bench-vs-lichess.sh
#   TBSERVER=target/dist/tbserver ...     # default: target/release/tbserver (the README's build)
#   DURATION=3 ROUNDS=4 (defaults; about 6 minutes)   PASSES="cached uncached"
#   CONNECTIONS="64 1"   TARGETS="lila tb-standard tb-standard-off tb-probe tb-probe-cbor"
#   BUILTIN_DIR=target/bench-builtin
#   SERVER_CPUS=1 CLIENT_CPUS=0        # servers and wrk on separate cores (taskset)
set -euo pipefail
cd "$(dirname "$0")/.."
: "${LILA_TABLEBASE:?LILA_TABLEBASE=path to a lila-tablebase binary (docs/performance.md)}"
TBSERVER=${TBSERVER:-target/release/tbserver}
DURATION=${DURATION:-3}
ROUNDS=${ROUNDS:-4}
PASSES=${PASSES:-cached uncached}
CONNECTIONS=${CONNECTIONS:-64 1}
TARGETS=${TARGETS:-lila tb-standard tb-standard-off tb-probe tb-probe-cbor}
TB_PORT=${TB_PORT:-9321}
LILA_PORT=${LILA_PORT:-9322}
TB_OFF_PORT=${TB_OFF_PORT:-9323}
BUILTIN_DIR=${BUILTIN_DIR:-target/bench-builtin}
# Empty: wherever the scheduler puts them.
on_server_cpus=(${SERVER_CPUS:+taskset -c "$SERVER_CPUS"})
on_client_cpus=(${CLIENT_CPUS:+taskset -c "$CLIENT_CPUS"})
SYZYGY=${TBSERVER_SHARED_DIR:-../shared}/tables/syzygy
FENS=bench/fens-5piece-200.txt
command -v wrk >/dev/null || { echo "wrk not installed: apt-get install -y wrk" >&2; exit 1; }
for bin in "$LILA_TABLEBASE" "$TBSERVER"; do
  [ -x "$bin" ] || { echo "$bin: no such executable" >&2; exit 1; }
done
for port in "$TB_PORT" "$LILA_PORT" "$TB_OFF_PORT"; do
  if curl -s -o /dev/null "http://127.0.0.1:$port/"; then echo "port $port is taken" >&2; exit 1; fi
done

tb_pid='' tb_off_pid='' lila_pid='' config=$(mktemp) config_off=$(mktemp)
stop_servers() {
  for pid in $tb_pid $tb_off_pid $lila_pid; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  tb_pid='' tb_off_pid='' lila_pid=''
}
trap 'stop_servers; rm -f "$config" "$config_off"' EXIT

# The README's configuration has the 3-4-piece built-in tables on disk.
if [ "$(ls "$BUILTIN_DIR"/*.tbsb 2>/dev/null | wc -l)" -lt 35 ]; then
  "$TBSERVER" generate --pieces 4 --out "$BUILTIN_DIR"
fi

wait_ready() { # url pid
  for _ in $(seq 200); do
    curl -sf -o /dev/null "$1" && return
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  echo "no answer from $1" >&2
  exit 1
}

start_servers() { # cache entries (0: none)
  cat > "$config" <<CONF
listen = "127.0.0.1:$TB_PORT"
syzygy = ["$SYZYGY"]
cache_entries = $1
[builtin]
mode = "lazy"
dir = "$BUILTIN_DIR"
CONF
  sed -e "s/:$TB_PORT/:$TB_OFF_PORT/" -e '/^dir =/d' -e 's/^mode = "lazy"/mode = "off"/' "$config" > "$config_off"
  RUST_LOG=warn "${on_server_cpus[@]}" "$TBSERVER" serve --config "$config" &
  tb_pid=$!
  RUST_LOG=warn "${on_server_cpus[@]}" "$TBSERVER" serve --config "$config_off" &
  tb_off_pid=$!
  # lila's answer cache is off only with --cache 0; any other size holds
  # the 200 answers.
  local lila_cache=$(( $1 > 0 ? 20000 : 0 ))
  RUST_LOG=warn "${on_server_cpus[@]}" "$LILA_TABLEBASE" --standard "$SYZYGY" --mmap --cache "$lila_cache" --bind "127.0.0.1:$LILA_PORT" &
  lila_pid=$!
  wait_ready "http://127.0.0.1:$TB_PORT/readyz" "$tb_pid"
  wait_ready "http://127.0.0.1:$TB_OFF_PORT/readyz" "$tb_off_pid"
  wait_ready "http://127.0.0.1:$LILA_PORT/standard?fen=8/8/8/8/8/2k5/8/R3K3_w_-_-_0_1" "$lila_pid"
}

# target -> base URL, route, Accept header, server PID
url() { case $1 in lila) echo "http://127.0.0.1:$LILA_PORT" ;; tb-standard-off) echo "http://127.0.0.1:$TB_OFF_PORT" ;; *) echo "http://127.0.0.1:$TB_PORT" ;; esac; }
route() { case $1 in lila | tb-standard | tb-standard-off) echo /standard ;; *) echo /api/v1/probe ;; esac; }
accept() { case $1 in tb-probe-cbor) echo application/cbor ;; *) echo application/json ;; esac; }
pid_of() { case $1 in lila) echo "$lila_pid" ;; tb-standard-off) echo "$tb_off_pid" ;; *) echo "$tb_pid" ;; esac; }

enc() { sed -e 's/ /_/g' <<<"$1"; }
# Every FEN once per target: each must answer 200 (and is cached, where a
# cache is on). Also warms the page cache and opens every table.
ask_all() {
  local target code
  for target in $TARGETS; do
    while read -r fen; do
      code=$(curl -s -o /dev/null -w '%{http_code}' -H "Accept: $(accept "$target")" "$(url "$target")$(route "$target")?fen=$(enc "$fen")")
      [ "$code" = 200 ] || { echo "$target answered $code for $fen" >&2; exit 1; }
    done < "$FENS"
  done
}

hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
run() { # target conns: wrk's RESULT line plus the server's CPU per request
  local threads=$(( $2 < 2 ? 1 : 2 )) pid before after line
  pid=$(pid_of "$1")
  before=$(ticks "$pid")
  line=$("${on_client_cpus[@]}" wrk -t"$threads" -c"$2" -d"${DURATION}s" --timeout 5s -s bench/probe.lua "$(url "$1")" -- "$FENS" "$(route "$1")" "$(accept "$1")" | grep '^RESULT')
  after=$(ticks "$pid")
  case "$line" in *errors_status=0*) ;; *) echo "$1: non-2xx answers: $line" >&2; exit 1 ;; esac
  awk -v line="$line" -v ticks=$((after - before)) -v hz="$hz" \
    'BEGIN { match(line, /requests=[0-9]+/); n = substr(line, RSTART + 9, RLENGTH - 9); printf "%s cpu_us=%.2f\n", line, ticks * 1e6 / hz / n }'
}
field() { sed -e "s/.* $1=\([^ ]*\).*/\1/"; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "tbserver: $TBSERVER; lila-tablebase: $LILA_TABLEBASE; DURATION=$DURATION ROUNDS=$ROUNDS;" \
  "servers on CPUs ${SERVER_CPUS:-any}, wrk on CPUs ${CLIENT_CPUS:-any}"
for pass in $PASSES; do
  case $pass in cached) start_servers 10000 ;; uncached) start_servers 0 ;; *) echo "unknown pass $pass" >&2; exit 1 ;; esac
  ask_all
  for conns in $CONNECTIONS; do
    results=$(mktemp)
    declare -A CPU=() RPS=() P50=()
    # Warm each target's connection code paths.
    for target in $TARGETS; do
      "${on_client_cpus[@]}" wrk -t1 -c"$conns" -d1s -s bench/probe.lua "$(url "$target")" -- "$FENS" "$(route "$target")" "$(accept "$target")" >/dev/null
    done
    read -ra order <<<"$TARGETS"
    for _ in $(seq "$ROUNDS"); do
      for target in "${order[@]}"; do
        echo "$target $(run "$target" "$conns")" >> "$results"
      done
      order=("${order[@]:1}" "${order[0]}")
    done
    for target in $TARGETS; do
      rows=$(grep "^$target " "$results")
      cpu=$(field cpu_us <<<"$rows" | median) rps=$(field rps <<<"$rows" | median)
      p50=$(field p50_ms <<<"$rows" | median) p99=$(field p99_ms <<<"$rows" | median)
      printf '%-8s connections=%-3s %-13s %-13s cpu_us/request=%-7s req/s=%-7s p50_ms=%-7s p99_ms=%s\n' \
        "$pass" "$conns" "$target" "$(route "$target")" "$cpu" "$rps" "$p50" "$p99"
      CPU[$target]=$cpu RPS[$target]=$rps P50[$target]=$p50
    done
    if [ -n "${CPU[lila]:-}" ]; then
      for target in $TARGETS; do
        [ "$target" = lila ] && continue
        awk -v pass="$pass" -v conns="$conns" -v target="$target" \
          -v c="${CPU[$target]}" -v r="${RPS[$target]}" -v p="${P50[$target]}" -v lc="${CPU[lila]}" -v lr="${RPS[lila]}" -v lp="${P50[lila]}" \
          'BEGIN { printf "%-8s connections=%-3s %-13s vs lila: CPU/request lila/tbserver=%.2f  req/s tbserver/lila=%.2f  p50 tbserver/lila=%.2f\n", pass, conns, target, lc / c, r / lr, p / lp }'
      done
    fi
    rm -f "$results"
  done
  stop_servers
done
