package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/redistest"
)

// BenchmarkStoreProcess measures whole-process runs against the embedded
// file store and against Redis on loopback, interleaved in one run so the
// ratios hold on a noisy machine: a fail-fast run on an open circuit and a
// healthy run of true on a closed one, for each store. Then, once, 200
// processes on one circuit released together (half failing, so half of them
// update the state) against each store: the wall time until the last exits,
// the updates lost (none may be), and the processes that left Redis for
// their local replica (none should):
//
//	go test -run '^$' -bench StoreProcess -benchtime 200x ./cmd/fusebox/
func BenchmarkStoreProcess(b *testing.B) {
	srv := redistest.Start(b)
	dir := b.TempDir()
	stores := []struct{ name, state string }{
		{"file", filepath.Join(dir, "state")},
		{"redis", srv.URL()},
	}
	env := func(state string) []string {
		return []string{"FUSEBOX_STATE_DIR=" + state, "HOME=" + dir, "STATE_DIRECTORY=" + filepath.Join(dir, "local"), "PATH=" + os.Getenv("PATH")}
	}
	type contender struct {
		name string
		env  []string
		argv []string
		want int
	}
	var contenders []contender
	for _, s := range stores {
		trip := exec.Command(fuseboxBin, "trip", "--new", "bridge", "--for", "1h")
		trip.Env = env(s.state)
		if out, err := trip.CombinedOutput(); err != nil {
			b.Fatalf("trip on %s: %v\n%s", s.name, err, out)
		}
		contenders = append(contenders,
			contender{s.name + "-open", env(s.state), []string{fuseboxBin, "run", "bridge", "--", "true"}, exitOpen},
			contender{s.name + "-healthy", env(s.state), []string{fuseboxBin, "run", "healthy", "--", "true"}, 0})
	}
	times := make([][]time.Duration, len(contenders))
	b.ResetTimer()
	for range b.N {
		for k, c := range contenders {
			d, code, stderr := timedRun(b, c.env, c.argv...)
			times[k] = append(times[k], d)
			if code != c.want || strings.Contains(stderr, "unreachable") {
				b.Fatalf("%s: exit %d, want %d:\n%s", c.name, code, c.want, stderr)
			}
		}
	}
	b.StopTimer()
	med := map[string]float64{}
	for k, c := range contenders {
		med[c.name] = ms(quantile(times[k], 0.5)) * 1000
		b.ReportMetric(med[c.name], c.name+"-median-µs")
		b.ReportMetric(ms(quantile(times[k], 0.99))*1000, c.name+"-p99-µs")
	}
	b.ReportMetric(med["redis-open"]/med["file-open"], "open-redis/file")
	b.ReportMetric(med["redis-healthy"]/med["file-healthy"], "healthy-redis/file")

	for _, c := range []struct{ name, state string }{
		{"file", filepath.Join(dir, "contention")},
		{"redis", srv.URL()},
	} {
		got := twoHundred(b, []host{newHostAt(b, c.state), newHostAt(b, c.state)}, "contention-"+c.name, 200)
		b.ReportMetric(float64(got.wall.Milliseconds()), c.name+"-200-wall-ms")
		b.ReportMetric(float64(got.lost), c.name+"-200-lost")
		b.ReportMetric(float64(got.fellBack), c.name+"-200-on-replica")
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkRedisBusyHost measures what issue 20 asked of the Redis store on a
// host whose every core is saturated (redistest.Saturate, or .ci/run's hog
// phase with FUSEBOX_TEST_HOG set): of 200 processes over two hosts released
// together, how many left Redis and how many counts Redis lacks; then, with
// Redis down (nothing listening), 100 cron-like runs on one host: how long
// the first and the others took, and how many warning lines they printed in
// all (the probes of twenty callers are TestRedisOnASaturatedHost's, with -v):
//
//	go test -run '^$' -bench RedisBusyHost -benchtime 1x ./cmd/fusebox/
func BenchmarkRedisBusyHost(b *testing.B) {
	srv := redistest.Start(b)
	redistest.Saturate(b)
	b.ResetTimer()
	for range b.N {
		got := twoHundred(b, []host{newHostAt(b, srv.URL()), newHostAt(b, srv.URL())}, "busy", 200)
		b.ReportMetric(float64(got.fellBack), "200-on-replica")
		b.ReportMetric(float64(got.warned), "200-warned")
		b.ReportMetric(float64(got.lost), "200-lost")
		b.ReportMetric(float64(got.timedOut), "200-timed-out")
		b.ReportMetric(float64(got.wall.Milliseconds()), "200-wall-ms")

		// Interleaved with runs on the embedded store, whose time is the
		// floor a run takes on this machine now.
		h := newHostAt(b, "redis://127.0.0.1:1/0") // nothing listens on port 1
		file := append(newHostAt(b, filepath.Join(b.TempDir(), "state")).env, "PATH="+os.Getenv("PATH"))
		var down, floor []time.Duration
		warnings := 0
		for i := range 100 {
			d, code, stderr := timedRun(b, append(h.env, "PATH="+os.Getenv("PATH")), fuseboxBin, "run", "--attempts", "1", "api", "--", "true")
			if code != 0 {
				b.Fatalf("run %d with Redis down: exit %d:\n%s", i, code, stderr)
			}
			warnings += strings.Count(stderr, "unreachable")
			if i == 0 {
				b.ReportMetric(ms(d), "down-first-run-ms")
				continue
			}
			down = append(down, d)
			d, _, _ = timedRun(b, file, fuseboxBin, "run", "--attempts", "1", "api", "--", "true")
			floor = append(floor, d)
		}
		b.ReportMetric(ms(quantile(down, 0.5)), "down-run-median-ms")
		b.ReportMetric(ms(quantile(down, 0.99)), "down-run-p99-ms")
		b.ReportMetric(ms(quantile(floor, 0.5)), "file-run-median-ms")
		b.ReportMetric(float64(quantile(down, 0.5))/float64(quantile(floor, 0.5)), "down/file")
		b.ReportMetric(float64(warnings), "down-warnings-per-100-runs")
	}
	b.ReportMetric(0, "ns/op")
}

// timedRun runs argv with env and returns how long it took, its exit status
// and its stderr.
func timedRun(b *testing.B, env []string, argv ...string) (time.Duration, int, string) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		b.Fatal(err)
	}
	return d, code, stderr.String()
}

func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*q)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
