# Relay: one static binary in a small non-root image.
#
# The runtime image also carries PostgreSQL's server binaries so the embedded
# default (no RELAY_DATABASE_URL) works for a quick look; in production point
# RELAY_DATABASE_URL at your own Postgres and RELAY_REDIS_URL at Redis — see
# docs/deploy.md. The data dir is a volume: it holds the embedded database and,
# when RELAY_MASTER_KEY is unset, the generated master key.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/relay ./cmd/relay

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates postgresql \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/relay --create-home relay \
 && install -d -o relay -g relay -m 0700 /var/lib/relay/data
COPY --from=build /out/relay /usr/local/bin/relay
USER 10001:10001
WORKDIR /var/lib/relay
ENV RELAY_DATA_DIR=/var/lib/relay/data
VOLUME ["/var/lib/relay/data"]
EXPOSE 8080 8081
# /readyz on the inference plane: 503 until the first snapshot and while draining.
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["/usr/local/bin/relay", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/relay"]
CMD ["serve"]
