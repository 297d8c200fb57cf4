# Relay: one static binary. The runtime image carries PostgreSQL's server
# binaries so the embedded default works with no RELAY_DATABASE_URL; point
# RELAY_DATABASE_URL at your own Postgres in production.
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
 && useradd --system --home-dir /var/lib/relay --create-home relay
COPY --from=build /out/relay /usr/local/bin/relay
USER relay
WORKDIR /var/lib/relay
ENV RELAY_DATA_DIR=/var/lib/relay/data
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/relay"]
CMD ["serve"]
