# syntax=docker/dockerfile:1
# One image for the manager and the agent: `schedlab manager` and `schedlab agent` are
# subcommands of the same static binary. The image runs as a non-root user; the agent gets root
# and privilege only from its DaemonSet's pod spec (securityContext), never from the image.

# The build stage does exactly what `make build` does.
FROM --platform=$BUILDPLATFORM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src

# Dependencies first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download

COPY api/ api/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY internal/ internal/
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w" -o bin/schedlab ./cmd/schedlab

# distroless/static: CA certificates and /etc/passwd with the nonroot user, no shell.
FROM gcr.io/distroless/static-debian12:nonroot
LABEL org.opencontainers.image.source="https://github.com/schedlab/schedlab" \
      org.opencontainers.image.description="schedlab: Kubernetes operator for Linux CPU-scheduler tuning experiments (manager and node agent)"
COPY --from=builder /src/bin/schedlab /schedlab
USER 65532:65532
ENTRYPOINT ["/schedlab"]
