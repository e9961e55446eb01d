package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/history"
)

func historyJSON(t *testing.T, dir string, args ...string) []map[string]any {
	t.Helper()
	p := inproc(t, dir, append([]string{"history", "--json"}, args...)...)
	if p.Code != 0 {
		t.Fatalf("history: exit %d: %s", p.Code, p.Stderr)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(p.Stdout), &rows); err != nil {
		t.Fatalf("history --json: %v: %q", err, p.Stdout)
	}
	return rows
}

func TestHistoryListsOutagesOfEveryCircuit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if p := inproc(t, dir, "history"); p.Code != 0 || !strings.Contains(p.Stdout, "no outage in the last 168h0m0s") {
		t.Fatalf("history of an empty dir: exit %d, %q %s", p.Code, p.Stdout, p.Stderr)
	}
	for _, name := range []string{"nas", "bridge"} {
		if p := inproc(t, dir, "run", "--backoff", "1ms", name, "--", "false"); p.Code != 1 {
			t.Fatalf("run %s: exit %d: %s", name, p.Code, p.Stderr)
		}
	}
	for range 2 {
		if p := inproc(t, dir, "run", "bridge", "--", "true"); p.Code != 75 {
			t.Fatalf("run on an open circuit: exit %d", p.Code)
		}
	}
	rows := historyJSON(t, dir)
	if len(rows) != 2 || rows[0]["circuit"] != "bridge" || rows[1]["circuit"] != "nas" {
		t.Fatalf("history = %v, want bridge's outage, then nas's", rows)
	}
	if rows[0]["ongoing"] != true || rows[0]["skips"] != 2.0 || rows[0]["failures"] != 3.0 {
		t.Errorf("bridge's ongoing outage = %v, want 2 skips and 3 failures", rows[0])
	}

	if p := inproc(t, dir, "reset", "bridge"); p.Code != 0 {
		t.Fatal(p.Stderr)
	}
	rows = historyJSON(t, dir, "bridge")
	if len(rows) != 1 || rows[0]["ongoing"] != false || rows[0]["ended_by"] != "reset by hand" || rows[0]["skips"] != 2.0 {
		t.Fatalf("history bridge = %v, want its outage ended by the reset, with 2 skips", rows)
	}
	reasons, _ := json.Marshal(rows[0]["reasons"])
	if string(reasons) != `[{"count":3,"reason":"exit status 1"}]` {
		t.Errorf("reasons = %s", reasons)
	}

	p := inproc(t, dir, "history")
	if lines := strings.Split(strings.TrimSpace(p.Stdout), "\n"); len(lines) != 3 || !strings.Contains(lines[2], "ongoing") || !strings.Contains(lines[1], "(reset by hand)") {
		t.Errorf("history table:\n%s", p.Stdout)
	}

	p = inproc(t, dir, "history", "--pattern", "--json")
	var pat history.Pattern
	if err := json.Unmarshal([]byte(p.Stdout), &pat); err != nil || pat.Outages != 2 {
		t.Fatalf("history --pattern --json: %v: %s", err, p.Stdout)
	}
	if p := inproc(t, dir, "history", "--pattern", "nas"); !strings.Contains(p.Stdout, "1 in all") || !strings.Contains(p.Stdout, "Sun") {
		t.Errorf("history --pattern nas:\n%s", p.Stdout)
	}
	if p := inproc(t, dir, "history", "--since", "soon"); p.Code != exitUsage {
		t.Errorf("history --since soon: exit %d, want %d", p.Code, exitUsage)
	}
}

// Skipped runs save what the runs' own flags would have cost them, not the
// config's defaults: eight skips of --attempts 1 runs whose command fails at
// once saved nothing (the defaults' three attempts and waits said 24 s).
func TestHistorySavedFollowsTheRunsFlags(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	for range 3 {
		if p := inproc(t, dir, "run", "--attempts", "1", "bridge", "--", "false"); p.Code != 1 {
			t.Fatalf("run: exit %d: %s", p.Code, p.Stderr)
		}
	}
	for range 8 {
		if p := inproc(t, dir, "run", "--attempts", "1", "bridge", "--", "true"); p.Code != 75 {
			t.Fatalf("run on the open circuit: exit %d: %s", p.Code, p.Stderr)
		}
	}
	rows := historyJSON(t, dir)
	if len(rows) != 1 || rows[0]["skips"] != 8.0 || rows[0]["saved_seconds"] != 0.0 {
		t.Fatalf("history = %v, want 8 skips saving 0 s", rows)
	}
}

// An event time that cannot be true is not believed, and one warning line
// per circuit says so; the outage stays sane.
func TestHistoryWarnsOfTimesBeyondBelief(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	for range 3 {
		inproc(t, dir, "run", "--attempts", "1", "bridge", "--", "false")
	}
	log := filepath.Join(dir, "events", "bridge.jsonl")
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"time":"0001-01-01T00:00:00Z","circuit":"bridge","kind":"failure","reason":"from a board without a clock"}` + "\n")
	f.WriteString(`{"time":"1970-01-01T00:00:01Z","circuit":"bridge","kind":"failure","reason":"from a board without a clock"}` + "\n")
	f.Close()
	p := inproc(t, dir, "history", "--json")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(p.Stdout), &rows); p.Code != 0 || err != nil || len(rows) != 1 || rows[0]["duration_seconds"].(float64) > 60 {
		t.Fatalf("history: exit %d, %v: %s", p.Code, err, p.Stdout)
	}
	lines := strings.Split(strings.TrimSpace(p.Stderr), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "bridge") || !strings.Contains(lines[0], "before 2000") || !strings.Contains(lines[0], "events=2") {
		t.Errorf("stderr = %q, want one warning naming bridge, its 2 events and why", p.Stderr)
	}
	if p := inproc(t, dir, "history", "nas"); p.Stderr != "" {
		t.Errorf("history of another circuit warned: %q", p.Stderr)
	}
}
