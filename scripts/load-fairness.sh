#!/usr/bin/env bash
# Cost budgets under abuse, on loopback (scripts/load-fairness.py): POLITE
# clients probing at RATE per second each, alone and then beside one client
# sending batches of 256 positions and 2 s analyses as fast as it can. The
# budget is the default (limits.client_budget_*), applied to loopback clients
# here (budget_exempt = []). Exits non-zero when a polite request is refused,
# the abuser never is, the polite p99 beside it is over twice its p99 alone,
# or a 429's Retry-After, honoured, does not get the abuser served.
#
#   scripts/load-fairness.sh            # POLITE=10 RATE=5 DURATION=30
set -euo pipefail
cd "$(dirname "$0")/.."
POLITE=${POLITE:-10}
RATE=${RATE:-5}
DURATION=${DURATION:-30}
PORT=${PORT:-9314}
cargo build --release --quiet --bin tbserver
source scripts/serve-shared.sh
start_tbserver "$PORT" 10000 "[limits]
budget_exempt = []"
python3 scripts/load-fairness.py "http://127.0.0.1:$PORT" bench/fens-5piece.txt "$POLITE" "$RATE" "$DURATION"
kill -0 "$server" || { echo "server died" >&2; exit 1; }
