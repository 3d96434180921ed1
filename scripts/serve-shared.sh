# Sourced by the load scripts: start_tbserver PORT CACHE_ENTRIES [EXTRA]
# starts the release build on 127.0.0.1:PORT with the shared Syzygy and
# Gaviota tables (built-in tables off) and EXTRA top-level configuration
# lines, waits until it is ready, stops it on exit, and sets $server to its
# PID. The binary is taken from $CARGO_TARGET_DIR (default target); with
# SERVER_NOFILE=N the server runs with a descriptor limit of N.
start_tbserver() {
  local port=$1 cache_entries=$2 extra=${3:-} shared=${TBSERVER_SHARED_DIR:-../shared}
  if curl -s -o /dev/null "http://127.0.0.1:$port/healthz"; then
    echo "port $port is taken (an earlier server still running?)" >&2
    return 1
  fi
  config=$(mktemp)
  cat > "$config" <<CONF
listen = "127.0.0.1:$port"
syzygy = ["$shared/tables/syzygy"]
gaviota = ["$shared/tables/gaviota"]
cache_entries = $cache_entries
$extra
[builtin]
mode = "off"
CONF
  local limit=()
  [ -n "${SERVER_NOFILE:-}" ] && limit=(prlimit "--nofile=$SERVER_NOFILE:$SERVER_NOFILE")
  RUST_LOG=warn "${limit[@]}" "${CARGO_TARGET_DIR:-target}/release/tbserver" serve --config "$config" &
  server=$!
  # Wait for it to exit, so that a next run cannot meet it still draining.
  # Under `set -e` a failing command ends the trap and sets the exit status:
  # the server may be gone already (a caller stopped it).
  trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true; rm -f "$config"' EXIT
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && kill -0 "$server" 2>/dev/null && return
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
  done
  echo "tbserver did not become ready on port $port" >&2
  return 1
}
