package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/serve"
)

// fullEventLogs gives n circuits of the state dir an event log of about
// size bytes (a log is cut past 4 MiB: file's maxEventsLog), all of it
// within the status page's 24 hours: a circuit that flapped, open and
// closed in turn, each opening with a 150-byte reason.
func fullEventLogs(t *testing.T, state string, n, size int) {
	t.Helper()
	store, err := file.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	now := time.Now()
	if err := os.MkdirAll(filepath.Join(state, "events"), 0o700); err != nil {
		t.Fatal(err)
	}
	for c := range n {
		name := fmt.Sprintf("flapper%02d", c)
		if err := store.Count(ctx, name, fusebox.Counts{Failures: 1}); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(filepath.Join(state, "events", name+".jsonl"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		reason := fmt.Sprintf("GET http://upstream.lan/%0150d: 503 Service Unavailable", c)
		var buf []byte
		for i := 0; len(buf) < size-1024; i++ {
			at := now.Add(-23*time.Hour + time.Duration(i)*time.Second)
			e := breaker.Event{Time: at, Circuit: name, Kind: breaker.EventFailure, Reason: reason, Cause: breaker.CauseOther}
			switch i % 3 {
			case 1:
				e = breaker.Event{Time: at, Circuit: name, Kind: breaker.EventTransition, From: breaker.Closed, To: breaker.Open, Reason: reason}
			case 2:
				e = breaker.Event{Time: at, Circuit: name, Kind: breaker.EventTransition, From: breaker.HalfOpen, To: breaker.Closed}
			}
			line, _ := json.Marshal(e)
			buf = append(append(buf, line...), '\n')
		}
		if _, err := f.Write(buf); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}

// The status page polls /api/outages, and Prometheus scrapes /metrics:
// 20 circuits with full (4 MiB) event logs, 20 pages asking at once and
// a scrape cost one bounded reading of the logs, not 20 readings of every
// event: the daemon's peak resident set stays under 80 MiB (46–59 MiB
// measured; 8,975 MiB before, 3.19 GiB in the issue).
func TestOutagesOfFullEventLogsCostABoundedSummary(t *testing.T) {
	t.Parallel() // waits on processes and timers: it runs beside the others
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	fullEventLogs(t, state, 20, 4<<20)
	d := startServe(t, state, writeConfigPath(t, dir, "circuits: {}\n"))
	before := peakRSS(t, d.Cmd.Process.Pid)

	var wg sync.WaitGroup
	bodies := make([]string, 21)
	for i := range bodies {
		wg.Go(func() {
			path := "/api/outages"
			if i == len(bodies)-1 {
				path = "/metrics"
			}
			code, _, body := d.Get(t, path)
			if code != 200 {
				t.Errorf("%s: %d %.200s", path, code, body)
			}
			bodies[i] = body
		})
	}
	wg.Wait()
	after := peakRSS(t, d.Cmd.Process.Pid)
	t.Logf("the daemon's peak RSS: %d MiB before, %d MiB after 20 /api/outages and a /metrics at once", before>>20, after>>20)

	var tl struct {
		Circuits []struct {
			Name    string
			Outages []json.RawMessage
			Earlier int
		}
	}
	if err := json.Unmarshal([]byte(bodies[0]), &tl); err != nil {
		t.Fatalf("/api/outages: %v: %.300s", err, bodies[0])
	}
	if len(tl.Circuits) != 20 {
		t.Errorf("/api/outages has %d circuits, want 20", len(tl.Circuits))
	}
	for _, c := range tl.Circuits {
		if len(c.Outages) != serve.MaxOutages || c.Earlier == 0 {
			t.Errorf("%s: %d outages, %d earlier; want the newest %d listed and the others counted", c.Name, len(c.Outages), c.Earlier, serve.MaxOutages)
		}
	}
	if bound := int64(80<<20) * testenv.RaceMemory; after > bound { // a race-built daemon holds more
		t.Errorf("the daemon's peak RSS is %d MiB, want at most %d", after>>20, bound>>20)
	}
}
