#!/bin/bash
# library-instructions.sh [N]: instructions per call of the library cases
# (bench/library.go), counted by valgrind's cachegrind: on a shared machine
# whose timings swing by 2x, a count that other work cannot change. Each case
# runs twice, once and N+1 times; the difference over N is one call's count.
# The clock's own cost (a vDSO read) is not in it: timings still decide.
set -euo pipefail
n=${1:-20000}
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/library.test
go test -c -o "$bin" .
count() { # count CASE RUNS: the instructions of the whole process
	GODEBUG=asyncpreemptoff=1 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
		"$bin" -test.run '^$' -test.bench "^BenchmarkLibrary\$/^serial\$/^$1\$" -test.benchtime "$2x" -test.cpu 1 2>&1 |
		awk '/I *refs/ { gsub(",", "", $4); print $4 }'
}
for c in 'gobreaker_v2_Execute' 'fusebox_Do,_mem_store' 'gobreaker_v2_Execute,_open' 'fusebox_Do,_mem_store,_open'; do
	one=$(count "$c" 1) many=$(count "$c" $((n + 1)))
	printf '%-32s %6d instructions/op\n' "$c" $(((many - one) / n))
done
