#!/usr/bin/env bash
# Builds the container image from ./Dockerfile without a Docker engine, runs
# tbserver inside it against the shared tables and checks a probe answer
# against the host's own binary. Prints the image size and the time taken.
#
# Base images cannot be pulled here, so local stand-ins are created under the
# names the Dockerfile's FROM lines use: a debootstrapped Debian for the
# runtime stage, and the same plus this machine's Rust toolchain for the build
# stage. Needs root, buildah and debootstrap (Debian packages).
#
# Steps: with no argument both; `build` makes the image only (CI runs it in
# the background beside the exhaustive tests), `check` runs and probes an
# image built before.
#
# Environment:
#   TBSERVER_DEPLOY_CACHE  debootstrap output, kept between runs [/var/cache/tbserver-deploy]
#   TBSERVER_TABLES        directory with syzygy/ and gaviota/ [../shared/tables]
#   TBSERVER_IMAGE         name of the built image [localhost/tbserver:latest]
#   TBSERVER_REBUILD_BASES set to 1 to recreate the stand-in base images
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
step=${1:-all}
case $step in
  all | build | check) ;;
  *) echo "usage: $0 [build|check]" >&2; exit 2 ;;
esac

CACHE=${TBSERVER_DEPLOY_CACHE:-/var/cache/tbserver-deploy}
TABLES=$(realpath "${TBSERVER_TABLES:-../shared/tables}")
IMAGE=${TBSERVER_IMAGE:-localhost/tbserver:latest}
SUITE=bookworm
PORT=${TBSERVER_DEPLOY_PORT:-19000}
# The probe checked inside the image: KRvK, White to move, a win.
FEN='8/8/8/8/8/2k5/8/R3K3 w - - 0 1'

bah() { buildah --storage-driver vfs "$@"; }
log() { printf '\n== %s (%ds)\n' "$*" $((SECONDS - started)) >&2; }

for tool in buildah debootstrap curl; do
  command -v "$tool" >/dev/null || { echo "$tool is needed (apt-get install buildah debootstrap curl)" >&2; exit 1; }
done
test -d "$TABLES/syzygy" || { echo "no tables at $TABLES/syzygy" >&2; exit 1; }

# The names the Dockerfile builds from (ARG defaults of its FROM lines).
rust_image=$(sed -n 's/^ARG RUST_IMAGE=//p' Dockerfile)
runtime_image=$(sed -n 's/^ARG RUNTIME_IMAGE=//p' Dockerfile)

# This machine's Debian mirror, from its apt sources (deb822 or one-line form).
mirror() {
  local f uri=''
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -e "$f" ] || continue
    uri=$(awk -v s="$SUITE" '/^URIs:/ {u=$2} /^Suites:/ {for (i=2;i<=NF;i++) if ($i==s) {print u; exit}}' "$f")
    [ -n "$uri" ] && { echo "$uri"; return; }
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -e "$f" ] || continue
    uri=$(sed -E 's/\[[^]]*\]//' "$f" | awk -v s="$SUITE" '$1=="deb" && $3==s {print $2; exit}')
    [ -n "$uri" ] && { echo "$uri"; return; }
  done
  echo "no apt source for $SUITE found under /etc/apt" >&2
  return 1
}

have_image() { bah inspect --type image "$1" >/dev/null 2>&1; }

if [ "$step" != check ]; then
  # A minimal Debian root file system, cached as a tarball.
  rootfs_tar=$CACHE/debian-$SUITE-minbase.tar
  if [ ! -s "$rootfs_tar" ]; then
    log "debootstrap $SUITE"
    mkdir -p "$CACHE"
    tmp=$(mktemp -d "$CACHE/rootfs.XXXXXX")
    timeout 900 debootstrap --variant=minbase "$SUITE" "$tmp" "$(mirror)"
    rm -rf "$tmp"/var/cache/apt/archives/*.deb "$tmp"/var/lib/apt/lists/*
    tar -C "$tmp" --numeric-owner -cf "$rootfs_tar.part" .
    mv "$rootfs_tar.part" "$rootfs_tar"
    rm -rf "$tmp"
  fi

  if [ "${TBSERVER_REBUILD_BASES:-0}" = 1 ] || ! have_image "$runtime_image"; then
    log "stand-in $runtime_image"
    ctr=$(bah from scratch)
    bah add "$ctr" "$rootfs_tar" /
    bah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd bash "$ctr"
    bah commit --rm "$ctr" "$runtime_image"
  fi

  if [ "${TBSERVER_REBUILD_BASES:-0}" = 1 ] || ! have_image "$rust_image"; then
    log "stand-in $rust_image (this machine's toolchain: $(rustc --version))"
    sysroot=$(rustc --print sysroot)
    ctr=$(bah from "$runtime_image")
    # What the official rust image has beyond Debian: a C toolchain, make and CA certificates.
    timeout 900 buildah --storage-driver vfs run --isolation chroot "$ctr" -- sh -c \
      'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc libc6-dev make ca-certificates >/dev/null && rm -rf /var/lib/apt/lists/*'
    # The toolchain without its documentation, where the official image keeps it.
    for part in bin lib libexec; do
      [ -d "$sysroot/$part" ] && bah copy "$ctr" "$sysroot/$part" "/usr/local/rust/$part"
    done
    # Trust what this machine trusts (a registry reached through a TLS-inspecting
    # proxy presents a local CA), so that cargo can fetch crates in the build.
    if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
      bah copy "$ctr" /usr/local/share/ca-certificates/ /usr/local/share/ca-certificates/
      bah run --isolation chroot "$ctr" -- update-ca-certificates >/dev/null
    fi
    bah run --isolation chroot "$ctr" -- sh -c \
      'mkdir -p /usr/local/cargo/bin && for b in /usr/local/rust/bin/*; do ln -sf "$b" /usr/local/cargo/bin/; done'
    bah config --env CARGO_HOME=/usr/local/cargo \
      --env PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$ctr"
    bah commit --rm "$ctr" "$rust_image"
  fi

  # Cargo fetches crates inside the build (chroot isolation shares the host's
  # network); without a registry, vendor beforehand or mount a registry cache.
  log "buildah bud -> $IMAGE"
  timeout 4500 nice -n 10 buildah --storage-driver vfs bud --isolation chroot --format docker \
    --pull=never --layers=false -t "$IMAGE" .
fi
if [ "$step" = build ]; then
  log "built $IMAGE; took $((SECONDS - started)) s"
  exit 0
fi
have_image "$IMAGE" || { echo "no image $IMAGE: run $0 build first" >&2; exit 1; }

# Start tbserver from the image's root file system as the image's user, with
# the tables bind-mounted read-only, the way a container engine would.
log "run $IMAGE"
ctr=$(bah from --pull=never "$IMAGE")
mnt=$(bah mount "$ctr")
cleanup() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true
  umount "$mnt/tables/syzygy" "$mnt/tables/gaviota" 2>/dev/null || true
  bah umount "$ctr" >/dev/null 2>&1 || true
  bah rm "$ctr" >/dev/null 2>&1 || true
}
trap cleanup EXIT
for kind in syzygy gaviota; do
  if [ -d "$TABLES/$kind" ]; then
    mount --bind "$TABLES/$kind" "$mnt/tables/$kind"
    mount -o remount,bind,ro "$mnt/tables/$kind"
  fi
done
user=$(bah inspect --format '{{.OCIv1.Config.User}}' "$IMAGE")
uid=$(chroot "$mnt" id -u "${user%%:*}")
gid=$(chroot "$mnt" id -g "${user%%:*}")
chroot_bin=$(command -v chroot)
env -i PATH=/usr/local/bin:/usr/bin:/bin TBSERVER_LISTEN=127.0.0.1:$PORT \
  TBSERVER_SYZYGY=/tables/syzygy TBSERVER_GAVIOTA=/tables/gaviota TBSERVER_BUILTIN_DIR=/var/cache/tbserver \
  TBSERVER_BUILTIN_SHIPPED_DIR=/usr/share/tbserver/builtin \
  "$chroot_bin" --userspec="$uid:$gid" "$mnt" sh -c 'cd /var/cache/tbserver && exec tbserver serve --log-format json' &
pid=$!
started_ns=$(date +%s%N)
# The first 4-piece answer comes from the tables shipped in the image: DTM
# and DTM50 of KPPvK exist in no mounted table, and nothing is generated.
kppk='4k3/8/8/8/8/8/3PP3/4K3 w - - 0 1'
first=''
for _ in $(seq 200); do
  first=$(curl -fsS -G "http://127.0.0.1:$PORT/api/v1/probe" --data-urlencode "fen=$kppk" 2>/dev/null) && break
  first=''
  sleep 0.02
done
first_ms=$(( ($(date +%s%N) - started_ns) / 1000000 ))
python3 - "$first" "$first_ms" <<'PY'
import json, sys
answer, ms = json.loads(sys.argv[1] or "null"), int(sys.argv[2])
assert answer, "no KPPvK answer within 4 s of starting"
print(f"first KPPvK answer {ms} ms after starting: category {answer['category']}, dtm {answer['dtm']}, dtm50 {answer['dtm50']}")
assert not answer.get("pending"), "KPPvK answer still pending: the shipped tables were not used"
assert answer["category"] == "win" and answer["dtm"] is not None and answer["dtm50"] is not None, answer
assert ms <= 1000, f"first KPPvK answer took {ms} ms (over 1 s)"
PY
generated=$(find "$mnt/var/cache/tbserver" -name '*.tbsb' | wc -l)
[ "$generated" = 0 ] || { echo "the image generated $generated tables for a 4-piece answer" >&2; exit 1; }
for _ in $(seq 100); do
  curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break
  sleep 0.2
done
env -i TBSERVER_LISTEN=127.0.0.1:$PORT "$chroot_bin" --userspec="$uid:$gid" "$mnt" /usr/local/bin/tbserver healthcheck
# Ask until the answer is complete, as a client would (a table the image
# lacks would answer `pending` or 503 `generating` at first).
in_image=''
for _ in $(seq 120); do
  answer=$(curl -sS -G "http://127.0.0.1:$PORT/api/v1/probe" --data-urlencode "fen=$FEN" -w '\n%{http_code}') || true
  if [ "${answer##*$'\n'}" = 200 ] && python3 -c 'import json, sys; sys.exit(1 if json.loads(sys.argv[1]).get("pending") else 0)' "${answer%$'\n'*}"; then
    in_image=${answer%$'\n'*}
    break
  fi
  sleep 0.5
done
[ -n "$in_image" ] || { echo "no complete answer from the image within 60 s: $answer" >&2; exit 1; }

# The host binary from the same sources as the image (a no-op when fresh).
host_bin=${TBSERVER_HOST_BIN:-target/release/tbserver}
[ -n "${TBSERVER_HOST_BIN:-}" ] || nice -n 10 cargo build --release --quiet --bin tbserver
on_host=$("$host_bin" probe --syzygy "$TABLES/syzygy" --gaviota "$TABLES/gaviota" "$FEN" 2>/dev/null)
python3 - "$in_image" "$on_host" <<'PY'
import json, sys
image, host = (json.loads(s) for s in sys.argv[1:3])
keys = ("category", "wdl50", "dtz50", "dtm", "dtm50", "sources")
got = {k: image.get(k) for k in keys}
want = {k: host.get(k) for k in keys}
print("in image:", got)
print("on host: ", want)
assert got == want and image.get("category") == "win", "image and host disagree"
assert [m["uci"] for m in image["moves"]] == [m["uci"] for m in host["moves"]], "move lists differ"
PY

kill -TERM "$pid"
wait "$pid" && status=0 || status=$?
pid=
test "$status" = 0 || { echo "tbserver in the image exited with $status after SIGTERM" >&2; exit 1; }

size=$(bah images --format '{{.Size}}' "$IMAGE" | head -1)
log "ok: $IMAGE answers like the host binary; image size $size; took $((SECONDS - started)) s"
