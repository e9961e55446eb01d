package main

import (
	"slices"
	"testing"
	"time"
)

func TestParseFlagsDefaults(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		tick   time.Duration
		runs   int
		bench  time.Duration
		run    []string
		rounds int
	}{
		{"full run", nil, time.Second, 300, time.Second, allScenarios, 3},
		{"quick", []string{"-quick"}, 250 * time.Millisecond, 30, 100 * time.Millisecond, allScenarios, 1},
		{"quick, but a tick of its own", []string{"-quick", "-tick", "500ms", "-run", "storm, jitter"}, 500 * time.Millisecond, 30, 100 * time.Millisecond, []string{"storm", "jitter"}, 1},
		{"quick in rounds", []string{"-quick", "-rounds", "2"}, 250 * time.Millisecond, 30, 100 * time.Millisecond, allScenarios, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseFlags(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if o.tick != tt.tick || o.runs != tt.runs || o.benchtime != tt.bench || !slices.Equal(o.scenarios, tt.run) || o.rounds != tt.rounds {
				t.Errorf("got tick %s, runs %d, benchtime %s, scenarios %v, rounds %d", o.tick, o.runs, o.benchtime, o.scenarios, o.rounds)
			}
		})
	}
}

func TestParseFlagsRejects(t *testing.T) {
	for _, args := range [][]string{
		{"-run", "storms"},
		{"-tick", "7s"},
		{"-n", "10,many"},
		{"extra"},
		{"-rounds", "-1"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("parseFlags(%q) = nil error", args)
		}
	}
}
