#!/bin/bash
# budgets.sh [OLD-REV]: the figures of docs/benchmarks.md §8, from one run
# each. The upstreams (budgets-upstreams.py) are a hanging openweather on
# 127.0.0.1:18091, which accepts and never answers, and a wttr on :18092.
#
#   1. fusebox call of the example weather chain (packaging/examples'
#      policy: openweather attempts 2, timeout 10s; deadline 20s) on a
#      fresh state dir: the first call after the primary starts hanging.
#   2. fusebox serve, a default-policy endpoint and that chain, against a
#      caller (curl -m WAIT) that declares WAIT in X-Fusebox-Wait, for
#      WAIT 5, 10, 30, and one that declares nothing (curl -m 60).
#
# With OLD-REV, each is run with the binary of that revision first.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'kill $up 2>/dev/null || true; rm -rf "$tmp"' EXIT
bins=()
if [ $# -gt 0 ]; then
	git -C "$root" worktree add -q "$tmp/old" "$1"
	(cd "$tmp/old" && go build -o "$tmp/fb-old" ./cmd/fusebox)
	git -C "$root" worktree remove --force "$tmp/old"
	bins+=(old)
fi
(cd "$root" && go build -o "$tmp/fb-new" ./cmd/fusebox)
bins+=(new)
python3 "$here/budgets-upstreams.py" & up=$!
sed -e 's|HANG|http://127.0.0.1:18091|' -e 's|WTTR|http://127.0.0.1:18092|' "$here/budgets.yaml" >"$tmp/config.yaml"
sleep 1
echo "== the first call after the primary starts hanging: fusebox call weather"
for b in "${bins[@]}"; do
	rm -rf "$tmp/st"
	start=$(date +%s%N)
	rc=0
	out=$("$tmp/fb-$b" call --json --config "$tmp/config.yaml" --state "$tmp/st" weather 2>/dev/null) || rc=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	echo "$b: exit $rc after ${ms} ms, source $(echo "$out" | sed -n 's/.*"source": *"\{0,1\}\([a-z]*\).*/\1/p' | head -1)"
done
echo "== fusebox serve against a caller that waits WAIT and says so"
measure() { # bin name wait curl-max
	rm -rf "$tmp/st"
	"$tmp/fb-$1" serve --config "$tmp/config.yaml" --state "$tmp/st" --listen 127.0.0.1:18417 2>/dev/null & pid=$!
	for _ in $(seq 100); do curl -s -o /dev/null 127.0.0.1:18417/api/circuits && break; sleep 0.1; done
	hdr=()
	if [ -n "$3" ]; then hdr=(-H "X-Fusebox-Wait: $3"); fi
	rc=0
	out=$(curl -s -o /dev/null -m "$4" "${hdr[@]}" -w '%{http_code} after %{time_total}s, source "%header{x-fusebox-source}", Retry-After "%header{retry-after}"' \
		"127.0.0.1:18417/call/$2") || rc=$?
	if [ $rc = 28 ]; then out="the caller gave up after $4s"; fi
	echo "$1: $2, wait ${3:-none declared}: $out"
	kill $pid
	wait $pid 2>/dev/null || true
}
for b in "${bins[@]}"; do measure "$b" hang "" 60; done
for w in 5 10 30; do
	for b in "${bins[@]}"; do
		measure "$b" hang "$w" "$w"
		measure "$b" weather "$w" "$w"
	done
done
