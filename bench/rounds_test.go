package main

import (
	"strings"
	"testing"
	"time"
)

func TestSpanIsTheMedianWithItsRange(t *testing.T) {
	tests := []struct {
		name   string
		vs     []float64
		format func(float64) string
		want   string
	}{
		{"one round is its value", []float64{2.75}, fmtRatio, "2.75x"},
		{"three rounds", []float64{2.90, 2.61, 2.75}, fmtRatio, "2.75x (2.61–2.90x, 3 rounds)"},
		{"two rounds take the mean of the two", []float64{1, 3}, fmtCount, "2 (1–3, 2 rounds)"},
		{"a shared unit is written once", []float64{1e6, 1.3e6, 1.2e6}, fmtDur, "1.20 ms (1.00–1.30 ms, 3 rounds)"},
		{"equal rounds say so", []float64{0, 0, 0}, fmtCount, "0 (every one of 3 rounds)"},
		{"a recovery not seen", []float64{4, inf, 5}, fmtTicks, "5 ticks (4 ticks to not within the run, 3 rounds)"},
		{"nothing measured", nil, fmtRatio, "not measured"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := span(tt.vs, tt.format); got != tt.want {
				t.Errorf("span(%v) = %q, want %q", tt.vs, got, tt.want)
			}
		})
	}
}

func TestRoundsVerdict(t *testing.T) {
	met := atMost(0.5)
	tests := []struct {
		vs   []float64
		want string
	}{
		{[]float64{0.4, 0.45, 0.5}, "met"},
		{[]float64{0.51, 0.6, 0.7}, "**missed**"},
		{[]float64{0.49, 0.54, 0.51}, "met in 1 of 3 rounds"},
	}
	for _, tt := range tests {
		if got := roundsVerdict(tt.vs, met); got != tt.want {
			t.Errorf("roundsVerdict(%v) = %q, want %q", tt.vs, got, tt.want)
		}
	}
}

// fixtureRounds are three rounds of a scenario with one target, one row
// without a target and one figure of the prose only.
func fixtureRounds() []roundResult {
	var rounds []roundResult
	for i, v := range []float64{0.54, 0.47, 0.51} {
		rounds = append(rounds, roundResult{
			Detail: "detail of round " + string(rune('1'+i)) + "\n",
			Figures: []figure{
				{Key: "open/bash", Label: "fail-fast run ≤0.5x the classic bash check's time", Value: v, Format: fmtRatio, Met: atMost(0.5)},
				{Key: "call/curl", Label: "call against curl", Value: 1 + v, Format: fmtRatio, Note: "(no target)"},
				{Key: "margin", Value: float64(time.Duration(200+100*i) * time.Microsecond), Format: fmtDur},
			},
		})
	}
	return rounds
}

func TestSectionOverRounds(t *testing.T) {
	s := overRounds(fixtureRounds())
	if k := s.medianRound(); k != 2 {
		t.Errorf("median round = %d, want 2 (index of 0.51x)", k)
	}
	start := time.Date(2026, 12, 7, 1, 40, 0, 0, time.UTC)
	var loads []roundLoad
	for i := range 3 {
		loads = append(loads, roundLoad{Start: start.Add(time.Duration(i) * time.Minute), End: start.Add(time.Duration(i)*time.Minute + 30*time.Second),
			LoadStart: "0.10", LoadEnd: "0.50", OtherWork: "other work used 1% of the CPU in the half second before it", Niceness: "nice -15"})
	}
	prose := func(s summary) string { return "The fail-fast run took " + s.get("margin") + " over the floor." }
	got := section(s, prose, loads, "abc1234")
	wantAll(t, "section", got,
		"detail of round 3\n",
		"The tables above are round 3's",
		"| fail-fast run ≤0.5x the classic bash check's time | 0.51x (0.47–0.54x, 3 rounds) | met in 1 of 3 rounds |",
		"| call against curl | 1.51x (1.47–1.54x, 3 rounds) | (no target) |",
		"**What this run shows.** The fail-fast run took 0.30 ms (0.20–0.40 ms, 3 rounds) over the floor.",
		"_Measured 2026-12-07 01:40–01:42 UTC on fusebox abc1234 in 3 rounds",
		"- round 2: 2026-12-07 01:41:00–01:41:30 UTC, load average 0.10 at its start, 0.50 at its end; other work used 1% of the CPU in the half second before it; nice -15.",
	)
	if strings.Contains(got, "| margin") {
		t.Errorf("a figure of the prose only became a table row:\n%s", got)
	}
	rows := targetRows(got)
	if len(rows) != 2 || rows[0][2] != "met in 1 of 3 rounds" {
		t.Errorf("the glance gathers %q", rows)
	}
}

func TestStormProseFromAFixture(t *testing.T) {
	figs := func(bash, run float64) []figure {
		return []figure{
			{Key: "classic bash/down", Value: bash, Format: fmtCount},
			{Key: "fusebox run/down", Value: run, Format: fmtCount},
		}
	}
	s := overRounds([]roundResult{{Figures: figs(72, 9)}, {Figures: figs(72, 11)}})
	got := stormProse(s)
	wantAll(t, "prose", got, "classic bash sent it 72 (every one of 2 rounds) requests", "`fusebox run` 10 (9–11, 2 rounds)", "`fusebox call` not measured")
	if strings.Contains(got, "curl --retry") {
		t.Errorf("prose names a contender that was not run:\n%s", got)
	}
}

// wantAll reports each of wants that got, the named text, lacks.
func wantAll(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, got)
		}
	}
}
