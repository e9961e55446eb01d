# licenses.sh: sourced by release.sh and container/build.sh, from the
# repository's root, so that every archive, .deb and image carries the same
# license files.

# licenses DIR: fusebox's LICENSE and NOTICE in DIR, and
# DIR/THIRD-PARTY-LICENSES: the license of every module DIR/fusebox links
# in (go version -m lists them), and of Go's standard library, which a
# static binary carries and whose licenses ask to be reproduced with it.
licenses() {
	install -m 0644 LICENSE NOTICE "$1/"
	{
		echo "fusebox is licensed under the Apache License 2.0 (LICENSE). Its binary also"
		echo "holds the Go standard library and the Go modules below, under these licenses."
		printf '\n==== Go %s (the standard library and runtime)\n\n' "$(go env GOVERSION)"
		cat "$(go env GOROOT)/LICENSE"
		go version -m "$1/fusebox" | awk '$1 == "dep" || $1 == "=>" { print $2, $3 }' |
			while read -r path ver; do
				dir=$(go mod download -json "$path@$ver" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
				found=
				for f in "$dir"/LICEN[CS]E* "$dir"/COPYING* "$dir"/NOTICE*; do
					[ -f "$f" ] || continue
					printf '\n==== %s %s (%s)\n\n' "$path" "$ver" "$(basename "$f")"
					cat "$f"
					found=1
				done
				if [ -z "$found" ]; then
					echo "licenses: no license file in module $path $ver ($dir)" >&2
					exit 1
				fi
			done
	} >"$1/THIRD-PARTY-LICENSES"
	chmod 0644 "$1/THIRD-PARTY-LICENSES"
}
