package main

import (
	"bytes"
	"encoding/json"
	"fmt"
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
// the updates lost (none may be), and the processes that fell back to their
// local dir because Redis missed their budget (at the default budget, and at
// one widened to 1s in the URL):
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
		trip := exec.Command(fuseboxBin, "trip", "bridge", "--for", "1h")
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
			cmd := exec.Command(c.argv[0], c.argv[1:]...)
			cmd.Env = c.env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			start := time.Now()
			err := cmd.Run()
			times[k] = append(times[k], time.Since(start))
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				b.Fatal(err)
			}
			if code != c.want || strings.Contains(stderr.String(), "unreachable") {
				b.Fatalf("%s: exit %d, want %d:\n%s", c.name, code, c.want, stderr.String())
			}
		}
	}
	b.StopTimer()
	med := map[string]float64{}
	for k, c := range contenders {
		slices.Sort(times[k])
		med[c.name] = float64(times[k][len(times[k])/2].Microseconds())
		b.ReportMetric(med[c.name], c.name+"-median-µs")
		b.ReportMetric(float64(times[k][len(times[k])*99/100].Microseconds()), c.name+"-p99-µs")
	}
	b.ReportMetric(med["redis-open"]/med["file-open"], "open-redis/file")
	b.ReportMetric(med["redis-healthy"]/med["file-healthy"], "healthy-redis/file")

	for _, c := range []struct{ name, state string }{
		{"file", filepath.Join(dir, "contention")},
		{"redis", srv.URL()},
		{"redis-1s", srv.URL() + "?read_timeout=1s&write_timeout=1s&dial_timeout=1s"},
	} {
		wall, lost, fellBack := contend(b, fuseboxBin, env(c.state), fmt.Sprintf("contention-%s", c.name), 200)
		b.ReportMetric(float64(wall.Milliseconds()), c.name+"-200-wall-ms")
		b.ReportMetric(float64(lost), c.name+"-200-lost")
		b.ReportMetric(float64(fellBack), c.name+"-200-fell-back")
	}
	b.ReportMetric(0, "ns/op")
}

// contend runs n processes on circuit name, released together; it returns
// the wall time from release to the last exit, the counts missing from the
// store the processes were given, and how many fell back to a local dir.
func contend(b *testing.B, bin string, env []string, name string, n int) (wall time.Duration, lost, fellBack int) {
	ready := b.TempDir()
	barrier, release, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	defer barrier.Close()
	cmds := make([]*exec.Cmd, n)
	stderr := make([]bytes.Buffer, n)
	for i := range cmds {
		cmd := exec.Command(bin, runArgs(name, []string{"--attempts", "1", "--trip-after", "100000"},
			"sh", "-c", `touch "$1"; cat; exit $2`, "sh", filepath.Join(ready, fmt.Sprint(i)), fmt.Sprint(3*(i%2)))...)
		cmd.Env, cmd.Stdin, cmd.Stderr = env, barrier, &stderr[i]
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		cmds[i] = cmd
	}
	for {
		if entries, _ := os.ReadDir(ready); len(entries) == n {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	release.Close()
	for i, cmd := range cmds {
		cmd.Wait()
		if strings.Contains(stderr[i].String(), "unreachable") {
			fellBack++
		}
	}
	wall = time.Since(start)
	st := exec.Command(bin, "status", "--json", name)
	st.Env = env
	out, err := st.Output()
	if err != nil {
		b.Fatalf("status: %v", err)
	}
	row := map[string]any{}
	var rows []map[string]any
	if err := jsonUnmarshal(out, &rows); err == nil && len(rows) == 1 {
		row = rows[0]
	}
	got, _ := row["total_successes"].(float64)
	got2, _ := row["total_failures"].(float64)
	return wall, n - int(got) - int(got2), fellBack
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
