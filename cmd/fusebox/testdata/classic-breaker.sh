#!/bin/bash
# The classic home-automation circuit check, as found in countless scripts:
# a timestamp file per endpoint under a hashed name; skip while it is younger
# than 300 s. Used by the benchmarks as the baseline for a fail-fast run.
name=$1; shift
f="${CB_DIR:-/tmp}/cb_$(echo "$name" | md5sum | cut -c1-8)"
if [ -f "$f" ] && [ $(( $(date +%s) - $(cat "$f") )) -lt 300 ]; then
	echo "circuit $name open, skipping" >&2
	exit 75
fi
for i in 1 2 3; do
	if eval "$@"; then rm -f "$f"; exit 0; fi
	[ "$i" -lt 3 ] && sleep $(( 2 ** i + RANDOM % 3 ))
done
date +%s > "$f"
exit 1
