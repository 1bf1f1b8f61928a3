# errata's container image: a static binary on a distroless base that has
# CA certificates, /etc/passwd with the nonroot user and a /tmp, and no
# shell. Build it with the version stamped from git (the build context has
# no .git):
#
#   docker build --build-arg VERSION="$(git describe --always --dirty)" -t errata .
#
# The go build line is the one of `./dev.sh test`, which builds and checks
# the same static binary (ops_test.go compares the two lines).

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, in a layer of their own: it is rebuilt only when go.mod or
# go.sum change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/errata .

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/errata /errata
# Numeric, so that Kubernetes runAsNonRoot can check it: nonroot is 65532.
USER 65532:65532
ENV ADDR=:8000
EXPOSE 8000
# The image has no curl: the binary itself asks GET /healthz on ADDR.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 CMD ["/errata", "healthcheck"]
ENTRYPOINT ["/errata"]
CMD ["serve"]
