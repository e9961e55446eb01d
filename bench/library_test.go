package main

import (
	"fmt"
	"testing"

	"github.com/sony/gobreaker/v2"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/mem"
)

func TestPairedRatioComparesRoundByRound(t *testing.T) {
	// The second round ran on a busy machine: both cases slowed together.
	gb := libResult{Rounds: []float64{100, 400, 110}}
	fb := libResult{Rounds: []float64{200, 800, 330}}
	if got := pairedRatio(fb, gb); got != 2 {
		t.Errorf("pairedRatio = %v, want 2 (the median of 2, 2 and 3)", got)
	}
	if got := median64([]float64{1, 2, 3, 10}); got != 2.5 {
		t.Errorf("median64 of an even count = %v, want 2.5", got)
	}
}

// BenchmarkLibrary runs the library cases as Go benchmarks, so that a tool
// that counts instructions (scripts/library-instructions.sh, under valgrind)
// can compare them without the noise of a shared machine.
func BenchmarkLibrary(b *testing.B) {
	cases, err := libCases(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range cases {
		b.Run(mode(c.Parallel)+"/"+c.Name, c.Bench)
	}
}

// BenchmarkDoVsGobreaker compares Circuits.Do on a closed circuit in the
// in-memory store with gobreaker v2's Execute: the two take turns for
// libRounds rounds, each a sub-benchmark of -benchtime, and the last lines
// give the median of each round's ratio (the target is at most 2x):
//
//	go test -run XXX -bench DoVsGobreaker -benchtime 1s
func BenchmarkDoVsGobreaker(b *testing.B) {
	// gobreaker has no timeouts: the like-for-like Do has none either, and
	// allocates nothing.
	noTimeout := fusebox.Policy{Retry: fusebox.RetryPolicy{Timeout: fusebox.NoDeadline, Deadline: fusebox.NoDeadline}}
	for _, parallel := range []bool{false, true} {
		cases := []libCase{
			{"gobreaker", parallel, gobreakerBench(gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{Name: "bench"}), parallel, false)},
			{"fusebox", parallel, doBench(fusebox.New(mem.New()), parallel, false)},
			{"fusebox, no timeout", parallel, doBench(fusebox.New(mem.New(), fusebox.WithPolicy(noTimeout)), parallel, false)},
		}
		res := make([]libResult, len(cases))
		for range libRounds {
			for i, c := range cases {
				var ns float64
				b.Run(mode(parallel)+"/"+c.Name, func(b *testing.B) {
					c.Bench(b)
					ns = float64(b.Elapsed().Nanoseconds()) / float64(b.N) // the last run is the measured one
				})
				res[i].Rounds = append(res[i].Rounds, ns)
			}
		}
		fmt.Printf("%s: fusebox Do, mem store / gobreaker Execute: %.2fx default policy, %.2fx without a timeout (median of %d paired rounds)\n",
			mode(parallel), pairedRatio(res[1], res[0]), pairedRatio(res[2], res[0]), libRounds)
	}
}
