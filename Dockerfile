# `toolscore serve` in a container: a static musl binary built with Cargo's
# `dist` profile (as scripts/release.sh builds the published ones) on a
# distroless base that holds CA certificates and little else.
#
#   docker build -t toolscore .
#   docker run -p 4317:4317 -p 4318:4318 -p 9464:9464 toolscore -e /data/expected.jsonl
#
# Arguments after the image name go to `toolscore serve`. It listens on every
# interface (the TOOLSCORE_*_ENDPOINT variables below); set
# TOOLSCORE_AUTH_TOKEN_FILE (and TLS) before exposing the ports beyond a
# trusted network: serve warns about it at start until then.

# ------------------------------------------------------------ build
# The image brings gcc and musl-dev, for the C code of aws-lc-sys and mimalloc.
FROM rust:1.95-alpine3.23 AS build
# A static wget for the health check (the final image has no shell or curl).
# The Alpine release in the tag above fixes the package's version.
# hadolint ignore=DL3018
RUN apk add --no-cache busybox-static
WORKDIR /src
COPY . .
# On Alpine the host target is musl, and musl binaries link statically.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --locked --profile dist --bin toolscore \
    && cp target/dist/toolscore /usr/local/bin/toolscore

# ------------------------------------------------------------ image
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /usr/local/bin/toolscore /usr/local/bin/toolscore
# busybox runs the applet its file is named after.
COPY --from=build /bin/busybox.static /usr/local/bin/wget
# distroless's `nonroot` user.
USER 65532:65532
WORKDIR /home/nonroot
ENV TOOLSCORE_GRPC_ENDPOINT=0.0.0.0:4317 \
    TOOLSCORE_HTTP_ENDPOINT=0.0.0.0:4318 \
    TOOLSCORE_ADMIN_ENDPOINT=0.0.0.0:9464
# OTLP/gRPC, OTLP/HTTP, admin (/metrics, /healthz, /readyz).
EXPOSE 4317 4318 9464
# /healthz answers while the process is up; /readyz (for a load balancer)
# also needs room in the buffer. Plain HTTP: with TLS on, probe from outside.
# HEALTHCHECK's --timeout bounds the probe (busybox wget's own -T crashed in
# a static build tried here).
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/wget", "-q", "-O", "/dev/null", "http://127.0.0.1:9464/healthz"]
ENTRYPOINT ["/usr/local/bin/toolscore", "serve"]
