# tbserver container image: a build stage with the Rust toolchain, and a small
# Debian runtime stage running as a non-root user.
#
#   docker build -t tbserver .
#   docker run -p 9000:9000 -v /srv/syzygy:/tables/syzygy:ro \
#       -v /srv/gaviota:/tables/gaviota:ro -v tbcache:/var/cache/tbserver tbserver
#
# Without a Docker engine, deploy/build-image.sh builds this same file with
# buildah and checks the image answers correctly.

ARG RUST_IMAGE=docker.io/library/rust:1.95-bookworm
ARG RUNTIME_IMAGE=docker.io/library/debian:bookworm-slim

FROM ${RUST_IMAGE} AS build
# bindgen (gaviota-sys) needs libclang; jemalloc (tikv-jemalloc-sys) is
# built with make, which the official image has but a slimmer base may not.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libclang-dev make \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The registry and target caches survive between builds (BuildKit and buildah
# both keep `type=cache` mounts); the binary is copied out of the cache. The
# `dist` profile is release with link-time optimization (Cargo.toml).
RUN --mount=type=cache,id=tbserver-cargo-registry,target=/usr/local/cargo/registry \
    --mount=type=cache,id=tbserver-target,target=/src/target \
    cargo build --profile dist --locked --bin tbserver \
 && install -m 0755 target/dist/tbserver /usr/local/bin/tbserver
# The 35 built-in tables of 3-4 pieces with every metric (compressed harder
# than a server generating on demand would: the image makes them once): a
# new replica answers any 4-piece position at once.
RUN tbserver generate --compression small --out /usr/share/tbserver/builtin

FROM ${RUNTIME_IMAGE} AS runtime
RUN useradd --system --uid 10001 --user-group --no-create-home --home-dir /nonexistent tbserver \
 && mkdir -p /tables/syzygy /tables/gaviota /var/cache/tbserver \
 && chown tbserver:tbserver /var/cache/tbserver
COPY --from=build /usr/local/bin/tbserver /usr/local/bin/tbserver
COPY --from=build /usr/share/tbserver/builtin /usr/share/tbserver/builtin
# Tables are mounted read-only; the image's own built-in tables are read from
# /usr/share, and tables generated later (5 pieces) go to a writable volume.
ENV TBSERVER_LISTEN=0.0.0.0:9000 \
    TBSERVER_SYZYGY=/tables/syzygy \
    TBSERVER_GAVIOTA=/tables/gaviota \
    TBSERVER_BUILTIN_DIR=/var/cache/tbserver \
    TBSERVER_BUILTIN_SHIPPED_DIR=/usr/share/tbserver/builtin
VOLUME ["/var/cache/tbserver"]
USER tbserver:tbserver
WORKDIR /var/cache/tbserver
EXPOSE 9000
# SIGTERM finishes requests in flight and stops running searches, then exits 0.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 CMD ["tbserver", "healthcheck"]
ENTRYPOINT ["tbserver"]
CMD ["serve", "--log-format", "json"]
