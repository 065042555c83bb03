# syntax=docker/dockerfile:1
# crawlsieve container images (multi-stage). Not built in CI (no Docker engine there): keep it
# simple; see README "Container images".
#
#   docker build --target runtime -t crawlsieve:0.1.0 .          # gate, serve, dedup, cluster
#   docker build --target render  -t crawlsieve-render:0.1.0 .   # + Debian's Chromium (render, similar)
#
# Both run as the unprivileged user 65532 and work with a read-only root filesystem (writable
# /tmp from an emptyDir, as the Helm chart mounts it).

FROM rust:1.95-bookworm AS build
# librdkafka (bundled by the rdkafka crate) builds with make and links the system OpenSSL/zlib.
RUN apt-get update \
 && apt-get install -y --no-install-recommends make pkg-config libssl-dev zlib1g-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY benches ./benches
COPY schemas ./schemas
RUN cargo build --release --locked --bin crawlsieve \
 && objcopy --strip-debug target/release/crawlsieve /crawlsieve

FROM debian:bookworm-slim AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates libssl3 zlib1g tini \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /crawlsieve /usr/local/bin/crawlsieve
COPY schemas /usr/share/crawlsieve/schemas
ENV HOME=/tmp TMPDIR=/tmp
USER 65532:65532
# 9464: /metrics, /healthz, /readyz of gate and render; 8080: crawlsieve serve.
EXPOSE 9464 8080
# tini is PID 1: it forwards SIGTERM to crawlsieve and reaps what crawlsieve does not wait
# for (Chromium's helper processes orphaned by a relaunch).
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/crawlsieve"]
CMD ["--help"]

FROM runtime AS render
USER root
# Debian's Chromium (what the tests drive) and fonts for CJK pages, so screenshots hash alike.
RUN apt-get update \
 && apt-get install -y --no-install-recommends chromium fonts-liberation fonts-noto-cjk \
 && rm -rf /var/lib/apt/lists/*
USER 65532:65532
CMD ["render", "--help"]
