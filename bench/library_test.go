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
