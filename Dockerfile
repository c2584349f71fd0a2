# hermes in a container: a multi-stage build of cmd/hermes (pure Go, no cgo:
# the embedded store's SQLite driver is Go too) onto a small Debian.
# docker-compose.yml runs it as the gateway beside PostgreSQL or
# EventStoreDB and NATS. Not built on the project's own machines (no Docker
# there): see README, "Stores".
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/hermes ./cmd/hermes

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 hermes \
 && mkdir -p /home/hermes/.hermes && chown hermes:hermes /home/hermes/.hermes
# The home exists, owned by hermes, before VOLUME: a named volume mounted
# there starts as a copy of it, so the hermes user can write it.
COPY --from=build /out/hermes /usr/local/bin/hermes
USER hermes
ENV HERMES_HOME=/home/hermes/.hermes
VOLUME /home/hermes/.hermes
ENTRYPOINT ["hermes"]
CMD ["gateway", "run"]
