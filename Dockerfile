# syntax=docker/dockerfile:1
#
# Lectern's image: one static binary (web assets and migrations embedded)
# on distroless, running as an unprivileged user. Build it with
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t lectern .
#
# or let `docker compose build` do it (compose.yaml). docs/operations.md
# explains running it.

# go.mod's go line: the official images build with GOTOOLCHAIN=local, so an
# older patch release would refuse the module.
ARG GO_VERSION=1.26.8

# The builder runs on the build machine's own platform and cross-compiles,
# so a multi-platform build needs no emulation.
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-alpine AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY backend ./backend
COPY migrations ./migrations
COPY assets ./assets
ARG VERSION=dev
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/lectern ./backend/cmd/lectern
# The data volume's mount point, created here because the final image has
# no shell: a fresh named volume takes its owner from it, so the unprivileged
# user can write Covers and archives there.
RUN mkdir -p /out/data

# distroless/static: CA certificates, time zones, /etc/passwd with the
# nonroot user (65532), and nothing else: no shell, no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/lectern /usr/local/bin/lectern
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV DATA_DIR=/data \
    LISTEN_ADDR=:8080 \
    LOG_FORMAT=json
EXPOSE 8080
VOLUME ["/data"]
# The image has no curl: the binary asks its own /readyz.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["/usr/local/bin/lectern", "healthcheck"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/lectern"]
CMD ["serve"]
