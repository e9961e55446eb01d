package main

import (
	"crypto/md5"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkFailFastProcess measures the whole-process time of a fail-fast run
// on an open circuit next to /bin/true, a static Go hello-world (the floor)
// and the classic bash timestamp-file check, and of a healthy run of true on
// a closed circuit, interleaved in one run so the ratios hold on a noisy
// machine. It reports medians and the ratios; healthy-cost-µs is what a
// healthy run costs beyond the fail-fast run and true itself:
//
//	go test -run '^$' -bench FailFastProcess -benchtime 400x ./cmd/fusebox/
func BenchmarkFailFastProcess(b *testing.B) {
	dir := b.TempDir()
	hello := filepath.Join(dir, "hello")
	build := exec.Command("go", "build", "-o", hello, "./testdata/hello")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build hello: %v\n%s", err, out)
	}
	// Timed as installed: a process of the file the Go linker wrote started
	// slower here than one of a copy written with write(2) (2db6eea's
	// session).
	hello = installCopy(b, hello, dir)
	fusebox := installCopy(b, fuseboxBin, dir)
	state := filepath.Join(dir, "state")
	env := []string{"FUSEBOX_STATE_DIR=" + state, "HOME=" + dir, "PATH=" + os.Getenv("PATH")}

	// Open the circuit for both contenders.
	trip := exec.Command(fusebox, "trip", "--new", "bridge", "--for", "1h")
	trip.Env = env
	if out, err := trip.CombinedOutput(); err != nil {
		b.Fatalf("trip: %v\n%s", err, out)
	}
	sum := md5.Sum([]byte("bridge\n"))
	cbFile := filepath.Join(dir, "cb_"+fmt.Sprintf("%x", sum)[:8])
	os.WriteFile(cbFile, []byte(strconv.FormatInt(time.Now().Unix(), 10)), 0o600)

	contenders := []struct {
		name string
		argv []string
		want int
	}{
		{"true", []string{"/bin/true"}, 0},
		{"hello", []string{hello}, 0},
		{"bash-check", []string{"bash", "testdata/classic-breaker.sh", "bridge", "true"}, 75},
		{"fusebox-open", []string{fusebox, "run", "bridge", "--", "true"}, 75},
		{"fusebox-healthy", []string{fusebox, "run", "healthy", "--", "true"}, 0},
	}
	times := make([][]time.Duration, len(contenders))
	b.ResetTimer()
	for range b.N {
		for k, c := range contenders {
			cmd := exec.Command(c.argv[0], c.argv[1:]...)
			cmd.Env = append(env, "CB_DIR="+dir)
			start := time.Now()
			err := cmd.Run()
			times[k] = append(times[k], time.Since(start))
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				b.Fatal(err)
			}
			if code != c.want {
				b.Fatalf("%s: exit %d, want %d", c.name, code, c.want)
			}
		}
	}
	b.StopTimer()
	med := make([]float64, len(contenders))
	for k, c := range contenders {
		slices.Sort(times[k])
		med[k] = float64(times[k][len(times[k])/2].Microseconds())
		p99 := times[k][len(times[k])*99/100]
		b.ReportMetric(med[k], c.name+"-median-µs")
		b.ReportMetric(float64(p99.Microseconds()), c.name+"-p99-µs")
	}
	b.ReportMetric(med[3]/med[1], "fusebox/hello")
	b.ReportMetric(med[2]/med[3], "bash/fusebox")
	b.ReportMetric(med[4]-med[3]-med[0], "healthy-cost-µs")
	b.ReportMetric(0, "ns/op")
}

// installCopy copies the program src into dir with write(2), as a package
// manager installs it, and returns the copy.
func installCopy(b *testing.B, src, dir string) string {
	b.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	dst := filepath.Join(dir, filepath.Base(src)+"-installed")
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		b.Fatal(err)
	}
	return dst
}
