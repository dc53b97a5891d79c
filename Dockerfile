# The sokovan binary in an image: one for managers (sokovan server) and
# agents on the docker runtime alike. Built with cgo so an agent can load
# NVML where the NVIDIA container toolkit mounts the driver.
#   docker build -t sokovan .
#   docker run --rm -p 8470:8470 -e SOKOVAN_ADMIN_TOKEN=… sokovan server --listen 0.0.0.0:8470 --db postgres://…
ARG GO_IMAGE=golang:1.26-bookworm
ARG BASE_IMAGE=debian:bookworm-slim

FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=1 go build -trimpath -ldflags="-s -w" -o /out/sokovan ./cmd/sokovan

FROM ${BASE_IMAGE}
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
	&& rm -rf /var/lib/apt/lists/* \
	&& useradd --system --home-dir /var/lib/sokovan --create-home sokovan
COPY --from=build /out/sokovan /usr/local/bin/sokovan
USER sokovan
EXPOSE 8470
ENTRYPOINT ["/usr/local/bin/sokovan"]
CMD ["--help"]
