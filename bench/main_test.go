package main

import (
	"slices"
	"testing"
	"time"
)

func TestParseFlagsDefaults(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		tick  time.Duration
		runs  int
		bench time.Duration
		run   []string
	}{
		{"full run", nil, time.Second, 300, time.Second, allScenarios},
		{"quick", []string{"-quick"}, 250 * time.Millisecond, 30, 100 * time.Millisecond, allScenarios},
		{"quick, but a tick of its own", []string{"-quick", "-tick", "500ms", "-run", "storm, jitter"}, 500 * time.Millisecond, 30, 100 * time.Millisecond, []string{"storm", "jitter"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseFlags(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if o.tick != tt.tick || o.runs != tt.runs || o.benchtime != tt.bench || !slices.Equal(o.scenarios, tt.run) {
				t.Errorf("got tick %s, runs %d, benchtime %s, scenarios %v", o.tick, o.runs, o.benchtime, o.scenarios)
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
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("parseFlags(%q) = nil error", args)
		}
	}
}
