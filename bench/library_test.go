package main

import (
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
// in-memory store with gobreaker v2's Execute, in libRounds rounds that take
// turns, and reports the median of each round's ratio (x-gobreaker; the
// target is at most 2). Each round of each case runs for -benchtime, so the
// benchmark's own ns/op is the whole comparison's:
//
//	go test -run XXX -bench DoVsGobreaker -benchtime 1s
func BenchmarkDoVsGobreaker(b *testing.B) {
	for _, parallel := range []bool{false, true} {
		b.Run(mode(parallel), func(b *testing.B) {
			cases := []libCase{
				{"gobreaker v2 Execute", parallel, gobreakerBench(gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{Name: "bench"}), parallel, false)},
				{"fusebox Do, mem store", parallel, doBench(fusebox.New(mem.New()), parallel, false)},
			}
			var res []libResult
			for b.Loop() { // once: one comparison outlasts any -benchtime
				var err error
				if res, err = runCases(cases); err != nil {
					b.Fatal(err)
				}
			}
			gb, fb := res[0], res[1]
			b.ReportMetric(gb.NsPerOp, "gobreaker-ns/op")
			b.ReportMetric(fb.NsPerOp, "fusebox-ns/op")
			b.ReportMetric(float64(fb.AllocsPerOp), "fusebox-allocs/op")
			b.ReportMetric(pairedRatio(fb, gb), "x-gobreaker")
		})
	}
}
