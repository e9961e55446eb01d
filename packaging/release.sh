#!/bin/sh
# release.sh [OUTDIR] builds fusebox's release files into OUTDIR (default
# dist/): a static, stripped binary per platform in a .tar.gz with its man
# pages, units, README.md, docs/, LICENSE, NOTICE and the licenses of what
# the binary links in; a .deb for linux amd64, arm64 and armhf (the ARMv6
# binary, for every Raspberry Pi); and SHA256SUMS over them all.
#
#   VERSION=1.2.3 packaging/release.sh            # every platform, into dist/
#   FUSEBOX_RELEASE_TARGETS=linux/amd64 packaging/release.sh /tmp/out
#
# VERSION defaults to `git describe --tags` (without its leading v), or
# 0.0.0+git.<commit> with no tag. FUSEBOX_RELEASE_TARGETS limits the
# platforms (GOOS/GOARCH, or linux/arm/6 and linux/arm/7 for GOARM).
# SOURCE_DATE_EPOCH (default: the commit's time) dates every file, so the
# same commit gives the same archives. Needs go, tar, gzip, sha256sum and,
# for the .debs, dpkg-deb.
set -eu

repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$repo/dist}
all="linux/amd64 linux/arm/6 linux/arm/7 linux/arm64 linux/riscv64 darwin/arm64 darwin/amd64 freebsd/amd64"
targets=${FUSEBOX_RELEASE_TARGETS:-$all}

cd "$repo"
. packaging/licenses.sh
if [ -z "${VERSION:-}" ]; then
	VERSION=$(git describe --tags 2>/dev/null || echo "0.0.0+git.$(git rev-parse --short HEAD)")
fi
VERSION=${VERSION#v}
case $VERSION in
[0-9]*) ;;
*) echo "release.sh: VERSION $VERSION must start with a digit (a Debian version)" >&2; exit 64 ;;
esac
: "${SOURCE_DATE_EPOCH:=$(git log -1 --format=%ct)}"
export SOURCE_DATE_EPOCH

mkdir -p "$out"
out=$(cd "$out" && pwd)
maintainer="fusebox maintainers <maintainers@users.noreply.a-seed-7c64f928.example>"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# build GOOS GOARCH GOARM DIR: a static, stripped binary DIR/fusebox that
# says VERSION to fusebox --version.
build() {
	CGO_ENABLED=0 GOOS=$1 GOARCH=$2 GOARM=$3 go build -trimpath \
		-ldflags "-s -w -X main.version=$VERSION -buildid=" -o "$4/fusebox" ./cmd/fusebox
}

# tgz DIR NAME: OUTDIR/NAME.tar.gz of DIR's contents under NAME/, with
# fixed owners, order and times.
tgz() {
	tar -C "$(dirname "$1")" --sort=name --mtime="@$SOURCE_DATE_EPOCH" \
		--owner=0 --group=0 --numeric-owner -cf - "$(basename "$1")" | gzip -9n >"$out/$2.tar.gz"
}

# docs DIR: the pages README.md links to, as DIR/docs, readable by all.
docs() {
	cp -R docs "$1/docs"
	chmod -R u=rwX,go=rX "$1/docs"
}

# copyright: the .deb's /usr/share/doc/fusebox/copyright, machine-readable
# (DEP-5).
copyright() {
	cat <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: fusebox
Upstream-Contact: $maintainer
Source: https://github.com/fusebox-hq/fusebox
Comment: /usr/bin/fusebox is a static binary: it also holds the Go standard
 library and the Go modules listed, with their licenses, in
 /usr/share/doc/fusebox/THIRD-PARTY-LICENSES.gz.

Files: *
Copyright: 2026 The fusebox authors
License: Apache-2.0

License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License"); you may not
 use this file except in compliance with the License. You may obtain a copy
 of the License at http://www.apache.org/licenses/LICENSE-2.0
 .
 Unless required by applicable law or agreed to in writing, software
 distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
 WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
 License for the specific language governing permissions and limitations
 under the License.
 .
 On Debian systems, the complete text of the Apache License, Version 2.0
 can be found in "/usr/share/common-licenses/Apache-2.0".
COPYRIGHT
}

# changelog: the .deb's changelog, in Debian's format, one entry for this
# release.
changelog() {
	cat <<CHANGELOG
fusebox ($VERSION) unstable; urgency=medium

  * fusebox $VERSION, built from commit $(git rev-parse --short=12 HEAD).
    What changed is in the project's history and README.md.

 -- $maintainer  $(LC_ALL=C date -u -R -d "@$SOURCE_DATE_EPOCH")
CHANGELOG
}

# deb BINDIR DEBARCH: OUTDIR/fusebox_VERSION_DEBARCH.deb.
deb() {
	root=$work/deb-$2
	rm -rf "$root"
	install -d -m 0755 "$root/DEBIAN" "$root/usr/bin" "$root/usr/lib/systemd/system" \
		"$root/usr/share/man/man1" "$root/usr/share/doc/fusebox" "$root/etc/fusebox"
	install -m 0755 "$1/fusebox" "$root/usr/bin/fusebox"
	# A commented config that names no circuit, valid as it is, so that the
	# units, which name it, start; a conffile, so that dpkg keeps its edits.
	install -m 0644 packaging/deb/config.yaml "$root/etc/fusebox/config.yaml"
	echo /etc/fusebox/config.yaml >"$root/DEBIAN/conffiles"
	chmod 0644 "$root/DEBIAN/conffiles"
	copyright >"$root/usr/share/doc/fusebox/copyright"
	# A version with a hyphen (git describe's 1.2.3-4-gabcdef) has a Debian
	# revision, the part after its last hyphen: the package is then not
	# native, and its changelog is changelog.Debian.gz.
	case $VERSION in
	*-*) changelog_gz=changelog.Debian.gz ;;
	*) changelog_gz=changelog.gz ;;
	esac
	changelog | gzip -9n >"$root/usr/share/doc/fusebox/$changelog_gz"
	gzip -9n <"$1/THIRD-PARTY-LICENSES" >"$root/usr/share/doc/fusebox/THIRD-PARTY-LICENSES.gz"
	chmod 0644 "$root/usr/share/doc/fusebox/copyright" "$root/usr/share/doc/fusebox/$changelog_gz" \
		"$root/usr/share/doc/fusebox/THIRD-PARTY-LICENSES.gz"
	for unit in packaging/systemd/*; do
		# The units name the binary where a hand install puts it.
		sed 's|/usr/local/bin/fusebox|/usr/bin/fusebox|g' "$unit" >"$root/usr/lib/systemd/system/$(basename "$unit")"
		chmod 0644 "$root/usr/lib/systemd/system/$(basename "$unit")"
	done
	for page in docs/man/*.1; do
		gzip -9n <"$page" >"$root/usr/share/man/man1/$(basename "$page").gz"
		chmod 0644 "$root/usr/share/man/man1/$(basename "$page").gz"
	done
	install -m 0644 README.md "$root/usr/share/doc/fusebox/README.md"
	docs "$root/usr/share/doc/fusebox"
	install -m 0644 packaging/README.md "$root/usr/share/doc/fusebox/README.packaging.md"
	for script in postinst prerm postrm; do
		install -m 0755 "packaging/deb/$script" "$root/DEBIAN/$script"
	done
	# Go links statically by design (CGO_ENABLED=0); lintian lets that
	# through only for a source package it sees build-depend on golang-go.
	install -d -m 0755 "$root/usr/share/lintian/overrides"
	cat >"$root/usr/share/lintian/overrides/fusebox" <<OVERRIDES
# A Go binary, static by design (CGO_ENABLED=0): one file for every distribution.
fusebox: statically-linked-binary [usr/bin/fusebox]
OVERRIDES
	chmod 0644 "$root/usr/share/lintian/overrides/fusebox"
	size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
	# md5sums of every file but the conffile (dpkg keeps its own), for
	# dpkg --verify and debsums.
	(cd "$root" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -print |
		sed 's|^\./||' | LC_ALL=C sort | xargs md5sum) >"$root/DEBIAN/md5sums"
	chmod 0644 "$root/DEBIAN/md5sums"
	cat >"$root/DEBIAN/control" <<CONTROL
Package: fusebox
Version: $VERSION
Architecture: $2
Maintainer: $maintainer
Installed-Size: $size
Section: utils
Priority: optional
Homepage: https://github.com/fusebox-hq/fusebox
Description: retries and shared circuit breakers for home-automation scripts
 fusebox runs commands and calls HTTP endpoints with retries, backoff and
 circuit breakers whose state persists across runs and is shared by every
 process on the host: once an endpoint has failed, the next runs skip it in
 milliseconds until one caller probes whether it is back. fusebox serve
 answers n8n, Node-RED and Home Assistant over HTTP with the same breakers.
CONTROL
	find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
	dpkg-deb --root-owner-group -Zxz --build "$root" "$out/fusebox_${VERSION}_$2.deb" >/dev/null
}

names=""
for t in $targets; do
	IFS=/ read -r goos goarch goarm <<T
$t
T
	case $t in
	linux/arm/6 | linux/arm/7) label=$goos-${goarch}v$goarm ;;
	linux/arm) echo "release.sh: say linux/arm/6 or linux/arm/7" >&2; exit 64 ;;
	*/*/*) echo "release.sh: unknown target $t" >&2; exit 64 ;;
	*) label=$goos-$goarch ;;
	esac
	case " $all " in
	*" $t "*) ;;
	*) echo "release.sh: unknown target $t; known: $all" >&2; exit 64 ;;
	esac
	name=fusebox-$VERSION-$label
	dir=$work/$name
	mkdir -p "$dir/man" "$dir/systemd"
	build "$goos" "$goarch" "${goarm:-}" "$dir"
	cp README.md "$dir/"
	licenses "$dir"
	docs "$dir"
	cp docs/man/*.1 "$dir/man/"
	cp packaging/systemd/* "$dir/systemd/"
	find "$dir" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
	tgz "$dir" "$name"
	names="$names $name.tar.gz"
	case $t in
	linux/amd64) debarch=amd64 ;;
	linux/arm64) debarch=arm64 ;;
	linux/arm/6) debarch=armhf ;; # Raspberry Pi OS's armhf runs on the Pi Zero and 1: ARMv6
	*) debarch= ;;
	esac
	if [ -n "$debarch" ]; then
		deb "$dir" "$debarch"
		names="$names fusebox_${VERSION}_$debarch.deb"
	fi
done

cd "$out"
# shellcheck disable=SC2086 # names are file names without spaces
sha256sum $names >SHA256SUMS
echo "release.sh: fusebox $VERSION:$names and SHA256SUMS in $out"
