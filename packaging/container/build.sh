#!/bin/sh
# build.sh [TAG] builds the fusebox image (packaging/container/Containerfile)
# from this checkout: a static binary, the build host's CA certificates and
# an unprivileged user 8417, FROM scratch, so no base image is pulled; with
# the licenses of the binary, as in every release archive (licenses.sh).
#
#   packaging/container/build.sh                       # fusebox-hq/fusebox:VERSION
#   GOARCH=arm64 packaging/container/build.sh fusebox-hq/fusebox:1.2.3-arm64
#
# VERSION as release.sh sets it (git describe); GOARCH and GOARM choose the
# platform (default: this machine's). It uses podman when installed, else
# docker; BUILDER=docker chooses. podman builds in docker format, the one
# that keeps HEALTHCHECK (OCI's image config has no such field).
# FUSEBOX_PODMAN_ARGS are passed to podman before "build" (the tests give
# their own --root, --runroot and storage driver).
set -eu

repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
. packaging/licenses.sh
if [ -z "${VERSION:-}" ]; then
	VERSION=$(git describe --tags 2>/dev/null || echo "0.0.0+git.$(git rev-parse --short HEAD)")
fi
VERSION=${VERSION#v}
tag=${1:-fusebox-hq/fusebox:$(echo "$VERSION" | tr + -)}
certs=${CA_CERTIFICATES:-/etc/ssl/certs/ca-certificates.crt}
if [ ! -s "$certs" ]; then
	echo "build.sh: no CA certificates at $certs (apt-get install ca-certificates, or set CA_CERTIFICATES)" >&2
	exit 69
fi
builder=${BUILDER:-$(command -v podman >/dev/null && echo podman || echo docker)}
goarch=${GOARCH:-$(go env GOARCH)}
case $goarch in
amd64) platform=linux/amd64 ;;
arm64) platform=linux/arm64 ;;
arm) platform=linux/arm/v${GOARM:-7} ;;
*) platform=linux/$goarch ;;
esac

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
# timetzdata: the binary carries the time zone database, which a scratch
# image has not, so that TZ (the Supervisor sets it for every add-on)
# gives notifications and history their local time instead of UTC.
CGO_ENABLED=0 GOOS=linux GOARCH=$goarch GOARM=${GOARM:-} go build -trimpath -tags timetzdata \
	-ldflags "-s -w -X main.version=$VERSION -buildid=" -o "$ctx/fusebox" ./cmd/fusebox
licenses "$ctx"
cp "$certs" "$ctx/ca-certificates.crt"
printf 'fusebox:x:8417:8417:fusebox:/data:/sbin/nologin\n' >"$ctx/passwd"
printf 'fusebox:x:8417:\n' >"$ctx/group"
mkdir "$ctx/data"
cp packaging/container/Containerfile "$ctx/Containerfile"

case $builder in
podman)
	# shellcheck disable=SC2086 # FUSEBOX_PODMAN_ARGS is a list of words
	podman ${FUSEBOX_PODMAN_ARGS:-} build --format docker --platform "$platform" \
		--label org.opencontainers.image.version="$VERSION" -t "$tag" -f "$ctx/Containerfile" "$ctx"
	;;
*)
	"$builder" build --platform "$platform" \
		--label org.opencontainers.image.version="$VERSION" -t "$tag" -f "$ctx/Containerfile" "$ctx"
	;;
esac
echo "$tag"
