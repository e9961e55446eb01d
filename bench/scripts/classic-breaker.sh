#!/bin/bash
# classic-breaker.sh NAME URL: the retry-and-circuit pattern of countless
# home-automation scripts, written from its description in issue 5, as the
# baseline of the storm and latency benchmarks.
#
# A run skips (exit 75) while the endpoint's file, holding the time its
# circuit opened, is younger than 300 s, and deletes it when older; it then
# tries curl up to 3 times, waiting 2 s and then 4 s plus 0-2 s of random
# jitter; it removes the file on success and writes it when every attempt
# failed.
#
# Times are kept in milliseconds so the benchmark can scale them: CB_SCALE
# divides every wait and the window (1, real time, by default). CB_DIR is
# where the files live (/tmp by default).
name=$1 url=$2
scale=${CB_SCALE:-1}
window_ms=$((300000 / scale))
f="${CB_DIR:-/tmp}/cb_$(echo "$name" | md5sum | cut -c1-8)"

if [ -f "$f" ]; then
	opened=$(cat "$f" 2>/dev/null) # another job may be removing or rewriting it
	if [ -n "$opened" ] && [ $(($(date +%s%3N) - opened)) -lt "$window_ms" ]; then
		echo "circuit $name open, skipping" >&2
		exit 75
	fi
	rm -f "$f"
fi
for i in 1 2 3; do
	if curl -fsS "$url"; then
		rm -f "$f"
		exit 0
	fi
	if [ "$i" -lt 3 ]; then
		ms=$((((2 ** i) * 1000 + RANDOM % 2001) / scale))
		sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
	fi
done
date +%s%3N >"$f"
exit 1
