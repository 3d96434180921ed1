#!/usr/bin/env bash
# End-to-end tests of the browser pages: installs the front-end packages
# (npm ci, lockfile committed), starts tbserver on a free local port with the
# shared tables, runs tests/e2e/*.test.mjs in headless Chromium, stops the server.
# Fails (non-zero exit) on any failure.
#
# Environment: TBSERVER_BIN (default target/release/tbserver, built if missing),
# TBSERVER_SHARED_DIR (default ../shared), CHROMIUM (default /usr/bin/chromium).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

shared="${TBSERVER_SHARED_DIR:-$root/../shared}"
bin="${TBSERVER_BIN:-$root/target/release/tbserver}"
chromium="${CHROMIUM:-/usr/bin/chromium}"

[ -d "$shared/tables/syzygy" ] || { echo "e2e: no Syzygy tables under $shared/tables/syzygy" >&2; exit 1; }
[ -x "$chromium" ] || { echo "e2e: Chromium not found at $chromium (apt-get install -y chromium)" >&2; exit 1; }
command -v node >/dev/null || { echo "e2e: node is not installed" >&2; exit 1; }

if [ ! -x "$bin" ]; then
  echo "e2e: building $bin"
  cargo build --release --bin tbserver
fi

echo "e2e: npm ci"
(cd web && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund)

work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# The committed bundle must be what web/ builds to (the binary embeds static/).
(cd web && OUT_DIR="$work/static" node build.mjs >/dev/null)
for f in app.js app.css site.css pieces/cburnett; do
  diff -r -q "$work/static/$f" "static/$f" >/dev/null || {
    echo "e2e: static/$f is stale: run 'cd web && npm run build' and commit" >&2; exit 1; }
done

port="$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
url="http://127.0.0.1:$port"

echo "e2e: starting $bin on $url"
TBSERVER_BUILTIN_DIR="$work/tbcache" "$bin" serve \
  --listen "127.0.0.1:$port" \
  --syzygy "$shared/tables/syzygy" \
  --gaviota "$shared/tables/gaviota" \
  --chesstb "$shared/tables/chesstb" \
  >"$work/server.log" 2>&1 &
server_pid=$!

for _ in $(seq 1 100); do
  if curl -fsS "$url/healthz" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "e2e: server exited early:" >&2; cat "$work/server.log" >&2; exit 1
  fi
  sleep 0.2
done
curl -fsS "$url/healthz" >/dev/null || { echo "e2e: server not healthy" >&2; cat "$work/server.log" >&2; exit 1; }

status=0
TBSERVER_URL="$url" TBSERVER_SHARED_DIR="$shared" CHROMIUM="$chromium" node --test --test-concurrency=1 tests/e2e/*.test.mjs || status=$?
if [ "$status" -ne 0 ]; then
  echo "e2e: FAILED (server log follows)" >&2
  tail -n 50 "$work/server.log" >&2
fi
exit "$status"
