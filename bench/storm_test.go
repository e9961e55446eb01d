package main

import (
	"testing"
	"time"
)

func TestSummarizeCountsRequestsAndRecovery(t *testing.T) {
	cfg := stormConfig{Scale: Scale{Tick: time.Second}, Ticks: 6, DownTicks: 3, Jobs: 2}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	run := stormRun{
		Requests: []request{
			{At: ms(10), Down: true}, {At: ms(20), Down: true}, {At: ms(2100), Down: true},
			{At: ms(3050)}, {At: ms(4010)}, {At: ms(5010)}, {At: ms(5020)},
			{At: ms(6500)}, // a straggler past the last tick gets a bucket of its own
		},
		Jobs: []jobResult{
			{Tick: 0, Dur: ms(100), Exit: 1}, {Tick: 0, Dur: ms(120), Exit: 1},
			{Tick: 1, Dur: ms(2), Exit: 75}, {Tick: 1, Dur: ms(2), Exit: 75},
			{Tick: 2, Dur: ms(30), Exit: 1}, {Tick: 2, Dur: ms(2), Exit: 75},
			{Tick: 3, Dur: ms(10), Exit: 0}, {Tick: 3, Dur: ms(2), Exit: 75}, // the probe tick
			{Tick: 4, Dur: ms(10), Exit: 0}, {Tick: 4, Dur: ms(10), Exit: 0},
			{Tick: 5, Dur: ms(10), Exit: 0}, {Tick: 5, Dur: ms(10), Exit: 0},
		},
	}
	s := summarize("fusebox run", cfg, run)
	if s.Requests != 8 || s.RequestsDown != 3 {
		t.Errorf("requests %d, down %d; want 8, 3", s.Requests, s.RequestsDown)
	}
	want := []int{2, 0, 1, 1, 1, 2, 1}
	if len(s.PerTick) != len(want) {
		t.Fatalf("per tick %v, want %v", s.PerTick, want)
	}
	for i := range want {
		if s.PerTick[i] != want[i] {
			t.Fatalf("per tick %v, want %v", s.PerTick, want)
		}
	}
	if s.RecoveryTicks != 1 {
		t.Errorf("recovery after %d ticks, want 1 (tick 4 is the first all-green tick)", s.RecoveryTicks)
	}
	if s.Succeeded != 5 || s.Skipped != 4 || s.Failed != 3 {
		t.Errorf("ok/skipped/failed %d/%d/%d, want 5/4/3", s.Succeeded, s.Skipped, s.Failed)
	}
	if s.TotalWall != ms(308) || s.Slowest != ms(120) || s.SkipWall != ms(8) {
		t.Errorf("total %s, slowest %s, skipped %s", s.TotalWall, s.Slowest, s.SkipWall)
	}
}

func TestSummarizeNeverRecovered(t *testing.T) {
	cfg := stormConfig{Scale: Scale{Tick: time.Second}, Ticks: 4, DownTicks: 2, Jobs: 1}
	run := stormRun{Jobs: []jobResult{{Tick: 2, Exit: 0}, {Tick: 3, Exit: 75}}}
	if s := summarize("x", cfg, run); s.RecoveryTicks != -1 {
		t.Errorf("recovery after %d ticks, want -1: the last tick skipped", s.RecoveryTicks)
	}
}
