package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
)

func TestHistoryKeepPrunesOlderEvents(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	s, err := file.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, age := range []time.Duration{20 * 24 * time.Hour, 10 * 24 * time.Hour, time.Hour} {
		ev := breaker.Event{Time: now.Add(-age), Circuit: "bridge", Kind: breaker.EventFailure, Reason: "refused"}
		s.Update(context.Background(), "bridge", func(*breaker.State) ([]breaker.Event, bool) { return []breaker.Event{ev}, true })
	}
	s.Close()
	env := writeConfig(t, dir, "history: {keep: 14d}\n")
	if p := inprocEnv(t, state, env, "gc"); p.Code != 0 {
		t.Fatalf("gc: exit %d: %s", p.Code, p.Stderr)
	}
	s, _ = file.Open(state)
	defer s.Close()
	events, err := s.Events(context.Background(), "bridge", time.Time{})
	if err != nil || len(events) != 2 {
		t.Fatalf("events after gc with keep 14d = %d (%v), want the 2 younger", len(events), err)
	}
}
