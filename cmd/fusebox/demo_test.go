package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestDemoWalksThroughEveryBehaviour(t *testing.T) {
	t.Parallel() // waits on processes and timers: it runs beside the others
	p := inproc(t, filepath.Join(t.TempDir(), "unused"), "demo", "--fast")
	if p.Code != 0 {
		t.Fatalf("demo: exit %d\n%s\n%s", p.Code, p.Stdout, p.Stderr)
	}
	for _, want := range []string{
		"waiting before retry", // retries with jitter
		"answered 21.5 from weather-api after 3 attempt(s)",
		"circuit opened circuit=weather-api",    // the trip
		"requests that reached the API: 0",      // instant skips
		"answered 21.3 from backup-api",         // the fallback
		"(source: stale)",                       // the stale answer
		"1 probed and got an answer, 9 skipped", // a single probe
		"circuit closed circuit=weather-api",    // recovery
		"weather-api  closed",                   // status
	} {
		if !strings.Contains(p.Stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, p.Stdout)
		}
	}
}
