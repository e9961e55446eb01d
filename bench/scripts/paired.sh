#!/usr/bin/env bash
# paired.sh RUNS 'COMMAND A' 'COMMAND B'
#
# Times two commands as whole processes, in turn (A B A B ...), RUNS times
# each after 5 warm-ups of each, and prints the median wall time of each and
# the median of the ratio A/B taken pair by pair: pairing keeps the ratio
# meaningful when the machine's speed drifts during the run; and the ratio
# of the CPU time (user and system) A and B used in all, read in clock
# ticks from /proc, too coarse to pair one run with another. The load
# average before and after is printed with it: quote it with the figure.
# Each command is one string split at blanks (no quoting), its output
# thrown away; its exit status is not acted on (a fail-fast run exits 75).
#
#   (cd bench && CGO_ENABLED=0 go build -o /tmp/hello ./hello)
#   bench/scripts/paired.sh 100 'fusebox run open-circuit -- true' /tmp/hello
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

# cputicks: sets ticks to the user and system clock ticks this shell's
# waited-for children have used, from /proc/PID/stat (cutime and cstime),
# with builtins only: a process forked to read them would be counted too.
cputicks() {
	local stat f
	read -r stat <"/proc/$$/stat"
	read -r -a f <<<"${stat##*) }"
	ticks=$((f[13] + f[14]))
}

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in 1 2 3 4 5; do
	elapsed "${acmd[@]}"
	elapsed "${bcmd[@]}"
done
us=0 ticks=0 ta=() tb=() ratios=() cpua=0 cpub=0
for ((i = 0; i < runs; i++)); do
	cputicks
	c0=$ticks
	elapsed "${acmd[@]}"
	x=$us
	cputicks
	c1=$ticks
	elapsed "${bcmd[@]}"
	y=$us
	cputicks
	c2=$ticks
	cpua=$((cpua + c1 - c0)) cpub=$((cpub + c2 - c1))
	ta+=("$x") tb+=("$y")
	ratios+=("$(awk -v x="$x" -v y="$y" 'BEGIN {printf "%.4f", x / y}')")
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'A median wall: %.2f ms\n' "$(printf '%s\n' "${ta[@]}" | median | awk '{print $1 / 1000}')"
printf 'B median wall: %.2f ms\n' "$(printf '%s\n' "${tb[@]}" | median | awk '{print $1 / 1000}')"
printf 'A/B median of %d paired ratios: %.2fx\n' "$runs" "$(printf '%s\n' "${ratios[@]}" | median)"
if ((cpub > 0)); then
	printf 'A/B CPU in all: %.2fx (%d against %d clock ticks)\n' "$(awk -v a="$cpua" -v b="$cpub" 'BEGIN {print a / b}')" "$cpua" "$cpub"
fi
