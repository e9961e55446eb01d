package history_test

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/history"
	"github.com/fusebox-hq/fusebox/internal/retention"
)

// yearDir is a state dir after a simulated year of one outage a day on
// each of 20 circuits, written through the file store with its automatic
// pruning at keep; made once per keep and shared by the benchmarks.
type yearDir struct {
	dir    string
	end    time.Time
	events int // written in all
}

var years sync.Map // keep -> *yearDir

const yearCircuits = 20

func simulatedYear(b *testing.B, keep time.Duration) *yearDir {
	b.Helper()
	if y, ok := years.Load(keep); ok {
		return y.(*yearDir)
	}
	y := &yearDir{dir: filepath.Join(b.TempDir(), "state")}
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	s, err := file.Open(y.dir, file.WithFsync(false), file.WithRetention(0, keep), file.WithNow(func() time.Time { return now }))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for day := range 365 {
		for c := range yearCircuits {
			name := fmt.Sprintf("circuit-%02d", c)
			down := start.AddDate(0, 0, day).Add(time.Duration(c)*time.Hour + 15*time.Minute)
			for _, batch := range outageEvents(name, down) {
				now = batch[len(batch)-1].Time
				if _, err := s.Update(ctx, name, func(*breaker.State) ([]breaker.Event, bool) { return batch, true }); err != nil {
					b.Fatal(err)
				}
				y.events += len(batch)
			}
			if err := s.Count(ctx, name, fusebox.Counts{Failures: 5, Skips: 12, Successes: 100}); err != nil {
				b.Fatal(err)
			}
		}
	}
	y.end = now
	years.Store(keep, y)
	return y
}

// outageEvents is one outage as the stores see it, in the Updates that
// write it: three failures open the circuit, two probes fail, one closes it.
func outageEvents(name string, down time.Time) [][]breaker.Event {
	at := func(d time.Duration) time.Time { return down.Add(d) }
	fail := func(d time.Duration, attempt int) breaker.Event {
		return breaker.Event{Time: at(d), Circuit: name, Kind: breaker.EventFailure, Attempt: attempt, Reason: "connect: connection refused"}
	}
	tr := func(d time.Duration, from, to breaker.Phase, why string, skips uint64) breaker.Event {
		return breaker.Event{Time: at(d), Circuit: name, Kind: breaker.EventTransition, From: from, To: to, Reason: why, Since: down, Skips: skips, For: breaker.Duration(30 * time.Second)}
	}
	return [][]breaker.Event{
		{fail(0, 1)}, {fail(2*time.Second, 2)},
		{fail(6*time.Second, 3), tr(6*time.Second, breaker.Closed, breaker.Open, "3 consecutive failures", 0)},
		{fail(40*time.Second, 1), tr(40*time.Second, breaker.HalfOpen, breaker.Open, "probe failed: connect: connection refused", 4)},
		{fail(2*time.Minute, 1), tr(2*time.Minute, breaker.HalfOpen, breaker.Open, "probe failed: connect: connection refused", 8)},
		{tr(5*time.Minute, breaker.HalfOpen, breaker.Closed, "probe succeeded", 12)},
	}
}

func dirSize(b *testing.B, dir string) (bytes int64, files int) {
	b.Helper()
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			fi, _ := d.Info()
			bytes += fi.Size()
			files++
		}
		return nil
	})
	return bytes, files
}

// BenchmarkHistoryOfAYear reads every stored event of the state dir and
// finds its outages, as `fusebox history` does, after a year of one outage
// a day on 20 circuits: pruned to the default 30 days, and kept whole.
func BenchmarkHistoryOfAYear(b *testing.B) {
	for _, keep := range []time.Duration{retention.Events, 400 * 24 * time.Hour} {
		b.Run(fmt.Sprintf("keep=%dd", int(keep.Hours()/24)), func(b *testing.B) {
			y := simulatedYear(b, keep)
			s, err := file.Open(y.dir)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			size, files := dirSize(b, y.dir)
			var outages int
			b.ResetTimer()
			for b.Loop() {
				events, err := s.AllEvents(context.Background(), time.Time{})
				if err != nil {
					b.Fatal(err)
				}
				out, _ := history.Outages(events, nil, y.end)
				outages = len(out)
			}
			b.ReportMetric(float64(size)/1024, "KiB-state-dir")
			b.ReportMetric(float64(files), "files")
			b.ReportMetric(float64(outages), "outages")
		})
	}
}
