package main

import "testing"

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
