#!/usr/bin/env bash
# Times the generation of every built-in table (3 and 4 pieces) from
# scratch, without and with DTM50, and prints wall time, CPU time, peak
# resident memory, peak anonymous memory (the resident set less the pages of
# mapped table files, which the kernel may drop and read again: what the
# generation itself needs) and size on disk for each. The machine may be shared: a
# baseline (shakmaty perft 5, via the gen_one example, which also times
# KRvK) is measured in the same run, so compare ratios across runs.
#
#   scripts/bench-generate.sh          # writes to a temporary directory
#   scripts/bench-generate.sh KRBvKQ KNNvKN   # then each of these (5 pieces,
#       with DTM50), alone, on top of the 3-4-piece tables: a first, untimed
#       run makes the 5-piece tables it needs (and itself, deleted again)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin tbserver --example gen_one
# Where cargo put them (CARGO_TARGET_DIR moves the build).
bin="${CARGO_TARGET_DIR:-target}/release"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# timed COMMAND...: runs it under /usr/bin/time (into $work/time) while
# sampling its anonymous memory every 0.1 s (the largest into $work/anon, KiB).
timed() {
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" >/dev/null 2>&1 &
  local timer=$! child="" peak=0 kib
  while kill -0 "$timer" 2>/dev/null; do
    [[ -n $child ]] || child=$(pgrep -P "$timer" || true)
    if [[ -n $child ]]; then
      kib=$(awk '/^RssAnon:/ { print $2 }' "/proc/$child/status" 2>/dev/null || true)
      [[ -n $kib ]] && ((kib > peak)) && peak=$kib
    fi
    sleep 0.1
  done
  wait "$timer"
  echo "$peak" >"$work/anon"
}
report() { # label, disk
  awk -v label="$1" -v disk="$2" -v anon="$(cat "$work/anon")" \
    '{ printf "%-16s wall %6.1f s  cpu %6.1f s  peak rss %5.2f GiB  anon %5.2f GiB  disk %s\n", label, $1, $2 + $3, $4 / 1048576, anon / 1048576, disk }' "$work/time"
}
measure() { # label, generate flags...
  local label=$1
  shift
  # The previous run's files go to disk first: written back during the
  # timed run, they would cost it wall time and some CPU time.
  sync
  timed "$bin/tbserver" generate --pieces 4 --out "$work/$label" "$@"
  report "$label" "$(du -sh "$work/$label" | cut -f1)"
}
measure without-dtm50 --without-dtm50
measure with-dtm50
for table in "$@"; do
  # Its 5-piece dependencies (promotions of pawn tables), untimed.
  "$bin/tbserver" generate "$table" --out "$work/with-dtm50" >/dev/null 2>&1 || true
  rm -f "$work/with-dtm50/$table.tbsb"
  sync
  timed "$bin/tbserver" generate "$table" --out "$work/with-dtm50"
  report "$table" "$(du -h "$work/with-dtm50/$table.tbsb" | cut -f1)"
done
# KRvK alone (mean of 20 generations) and the perft baseline.
"$bin/examples/gen_one" KRvK "$work/with-dtm50" 20 2>/dev/null
