package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/internal/manycircuits"
)

// scaleCircuits and scaleStale are the state dir of BenchmarkAtScale: ten
// thousand circuits, a thousand of them unused for longer than gc_after.
const (
	scaleCircuits = 10_000
	scaleStale    = 1_000
	scaleName     = "circuit-05000" // the one asked for by name, with a year of events
)

var scaleOnce struct {
	sync.Once
	dir string
	err error
}

// scaleDir writes, once per test binary, a state dir of scaleCircuits
// circuits, each with a state (one failure) and counts, of which
// scaleName has a year of one outage a day in its event log (kept whole),
// and scaleStale were last used 30 days ago.
func scaleDir(b *testing.B) string {
	scaleOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fusebox-scale-")
		if err != nil {
			scaleOnce.err = err
			return
		}
		scaleOnce.dir = filepath.Join(dir, "state")
		scaleOnce.err = writeScaleDir(scaleOnce.dir)
	})
	if scaleOnce.err != nil {
		b.Fatal(scaleOnce.err)
	}
	return scaleOnce.dir
}

func writeScaleDir(dir string) error {
	// An hour ago: gc, run now, finds every event log young but the
	// year's, and removes only the stale circuits.
	now := time.Now().Add(-time.Hour).UTC()
	s, err := file.Open(dir, file.WithFsync(false), file.WithRetention(0, 400*24*time.Hour), file.WithNow(func() time.Time { return now }))
	if err != nil {
		return err
	}
	defer s.Close()
	ctx := context.Background()
	// scaleName's year first: history takes events in the order the store
	// holds them, and ignores, as implausible, ones stored after a far later one.
	start := now.AddDate(-1, 0, -1)
	for day := range 365 {
		down := start.AddDate(0, 0, day).Add(6 * time.Hour)
		at := func(d time.Duration) time.Time { return down.Add(d) }
		batch := []breaker.Event{
			{Time: at(0), Circuit: scaleName, Kind: breaker.EventFailure, Attempt: 1, Reason: "connect: connection refused"},
			{Time: at(6 * time.Second), Circuit: scaleName, Kind: breaker.EventTransition, From: breaker.Closed, To: breaker.Open, Reason: "3 consecutive failures", Since: down},
			{Time: at(40 * time.Second), Circuit: scaleName, Kind: breaker.EventTransition, From: breaker.HalfOpen, To: breaker.Closed, Reason: "probe succeeded", Since: down},
		}
		if _, err := s.Update(ctx, scaleName, func(*breaker.State) ([]breaker.Event, bool) { return batch, true }); err != nil {
			return err
		}
	}
	if err := manycircuits.Write(ctx, s, scaleCircuits, now); err != nil {
		return err
	}
	// Last used a month ago: every file of the stale circuits.
	old := now.AddDate(0, -1, 0)
	for i := range scaleStale {
		name := manycircuits.Name(i)
		matches, _ := filepath.Glob(filepath.Join(dir, "*", name+".*"))
		matches = append(matches, filepath.Join(dir, name+".json"))
		for _, m := range matches {
			if err := os.Chtimes(m, old, old); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	return nil
}

// BenchmarkAtScale times, as whole processes of the fusebox binary, what a
// household with ten thousand circuits and a year of events asks: status of
// all, status of one, history of one, and a gc that removes a thousand
// unused circuits (on a fresh copy of the dir each time). The goals: status
// at most 0.3 s, status NAME and history NAME at most 20 ms, gc at most 0.5 s.
//
//	go test -run '^$' -bench AtScale -benchtime 10x ./cmd/fusebox/
func BenchmarkAtScale(b *testing.B) {
	dir := scaleDir(b)
	run := func(b *testing.B, state string, args ...string) {
		b.Helper()
		cmd := exec.Command(fuseboxBin, append([]string{"--state", state}, args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + filepath.Dir(state)}
		var out, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil || stderr.Len() > 0 {
			b.Fatalf("fusebox %v: %v, want a silent success\n%s%s", args, err, stderr.String(), out.String())
		}
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"status", []string{"status"}},
		{"status_NAME", []string{"status", scaleName}},
		{"history_NAME", []string{"history", scaleName, "--since", "400d"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				run(b, dir, c.args...)
			}
		})
	}
	b.Run("gc_1000_of_10000", func(b *testing.B) {
		var took time.Duration
		for i := 0; i < b.N; i++ {
			copyDir := filepath.Join(b.TempDir(), "state")
			if out, err := exec.Command("cp", "-a", dir, copyDir).CombinedOutput(); err != nil {
				b.Fatalf("cp: %v %s", err, out)
			}
			t0 := time.Now()
			run(b, copyDir, "gc")
			took += time.Since(t0)
		}
		b.ReportMetric(float64(took.Microseconds())/1000/float64(b.N), "ms/gc")
	})
}
