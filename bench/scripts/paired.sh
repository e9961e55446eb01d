#!/usr/bin/env bash
# paired.sh RUNS 'COMMAND A' 'COMMAND B'
#
# Times two commands as whole processes, in turn (A B A B ...), RUNS times
# each after 5 warm-ups of each, and prints the median wall time of each and
# the median of the ratio A/B taken pair by pair: pairing keeps the ratio
# meaningful when the machine's speed drifts during the run. The load
# average before and after is printed with it: quote it with the figure.
# Each command is one string split as a shell splits words, its output
# thrown away; its exit status is not acted on (a fail-fast run exits 75).
#
#   bench/scripts/paired.sh 100 'fusebox run open-circuit -- true' bench/hello/hello
set -u
runs=${1:?runs}
a=${2:?command A}
b=${3:?command B}
read -r -a acmd <<<"$a"
read -r -a bcmd <<<"$b"

# elapsed CMD...: sets us to the wall time of one run of CMD, in
# microseconds (no subshell: its fork would be timed too).
elapsed() {
	local t0=${EPOCHREALTIME/./}
	"$@" >/dev/null 2>&1 </dev/null
	us=$((${EPOCHREALTIME/./} - t0))
}

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in 1 2 3 4 5; do
	elapsed "${acmd[@]}"
	elapsed "${bcmd[@]}"
done
us=0 ta=() tb=() ratios=()
for ((i = 0; i < runs; i++)); do
	elapsed "${acmd[@]}"
	x=$us
	elapsed "${bcmd[@]}"
	y=$us
	ta+=("$x") tb+=("$y")
	ratios+=("$(awk -v x="$x" -v y="$y" 'BEGIN {printf "%.4f", x / y}')")
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'A median wall: %.2f ms\n' "$(printf '%s\n' "${ta[@]}" | median | awk '{print $1 / 1000}')"
printf 'B median wall: %.2f ms\n' "$(printf '%s\n' "${tb[@]}" | median | awk '{print $1 / 1000}')"
printf 'A/B median of %d paired ratios: %.2fx\n' "$runs" "$(printf '%s\n' "${ratios[@]}" | median)"
