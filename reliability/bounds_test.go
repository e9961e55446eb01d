package reliability

import (
	"bytes"
	"cmp"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// TestDamagedInputsCostLittle puts an oversized or irregular input where
// fusebox reads one — a state file of a gigabyte (sparse) or a FIFO, a
// config of a gigabyte, a FIFO as the config, YAML nested 40,000 deep,
// ${file:} naming /dev/zero or a FIFO, secrets.yaml as a FIFO — and runs
// `fusebox run c -- echo ran` through it; or a stored answer of a gigabyte or
// a FIFO, and runs `fusebox call w` (fresh: 10m) through it. A damaged state is moved aside and
// the command runs; a damaged config is not used (one ERROR line naming the
// problem) and the command runs under the built-in defaults. Either way it
// costs a few milliseconds of CPU and a few MiB more than a healthy run,
// measured against one (peak RSS is fusebox's own VmHWM; CPU time, user and
// system, is the median of 3 runs: unlike the time it takes, it does not
// grow with what else the machine runs). An input that blocks fusebox is
// killed after a minute.
func TestDamagedInputsCostLittle(t *testing.T) {
	type input struct {
		name  string
		setup func(t *testing.T, state, cfgDir string) // writes the damage
		code  int
		want  string // in stderr
		call  bool   // fusebox call w (a stored answer is read), not run
		// circuit is the one run, "c" when empty: the damage must be in
		// what run reads, the top of the config or its own circuit.
		circuit string
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "21") }))
	defer srv.Close()
	healthyConfig := "circuits:\n  c:\n    attempts: 1\n  w:\n    fresh: 10m\n    http: {url: '" + srv.URL + "'}\n"
	sparse := func(t *testing.T, path string, size int64) {
		write(t, path, nil)
		if err := os.Truncate(path, size); err != nil {
			t.Fatal(err)
		}
	}
	fifo := func(t *testing.T, path string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		os.Remove(path)
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	config := func(text string) func(*testing.T, string, string) {
		return func(t *testing.T, _, cfgDir string) { write(t, filepath.Join(cfgDir, "config.yaml"), []byte(text)) }
	}
	inputs := []input{
		{"state file of 1 GiB", func(t *testing.T, state, _ string) { sparse(t, filepath.Join(state, "c.json"), 1<<30) }, 0,
			"it holds 1073741824 bytes, more than the 1048576 a record may", false, ""},
		{"state file a FIFO", func(t *testing.T, state, _ string) { fifo(t, filepath.Join(state, "c.json")) }, 0,
			"it is not a regular file", false, ""},
		{"stored answer of 1 GiB", func(t *testing.T, state, _ string) { sparse(t, filepath.Join(state, "answers", "w.json"), 1<<30) }, 0,
			"it holds 1073741824 bytes, more than the 67108864 a record may", true, ""},
		{"stored answer a FIFO", func(t *testing.T, state, _ string) { fifo(t, filepath.Join(state, "answers", "w.json")) }, 0,
			"it is not a regular file", true, ""},
		{"config of 1 GiB", func(t *testing.T, _, cfgDir string) { sparse(t, filepath.Join(cfgDir, "config.yaml"), 1<<30) }, 0,
			"1073741824 bytes, more than the 4194304 read", false, ""},
		{"config a FIFO", func(t *testing.T, _, cfgDir string) { fifo(t, filepath.Join(cfgDir, "config.yaml")) }, 0,
			"not a regular file (a FIFO)", false, ""},
		{"config nested 40,000 deep", config("circuits: " + strings.Repeat("[", 40000) + strings.Repeat("]", 40000) + "\n"), 0,
			"nested too deep: collections nested more than 100 deep", false, ""},
		{"${file:/dev/zero}", config(healthyConfig + "  h:\n    http: {url: 'https://x/?k=${file:/dev/zero}'}\n"), 0,
			"not a regular file (a device)", false, "h"},
		{"${file:FIFO}", func(t *testing.T, _, cfgDir string) {
			fifo(t, filepath.Join(cfgDir, "key"))
			write(t, filepath.Join(cfgDir, "config.yaml"), []byte(healthyConfig+"  h:\n    http: {url: 'https://x/?k=${file:key}'}\n"))
		}, 0, "not a regular file (a FIFO)", false, "h"},
		{"secrets.yaml a FIFO", func(t *testing.T, _, cfgDir string) {
			fifo(t, filepath.Join(cfgDir, "secrets.yaml"))
			write(t, filepath.Join(cfgDir, "config.yaml"), []byte(healthyConfig+"  h:\n    http: {url: 'https://x/', headers: {Authorization: !secret t}}\n"))
		}, 0, "not a regular file (a FIFO)", false, "h"},
	}
	run := func(t *testing.T, in input) testenv.Proc {
		var runs []testenv.Proc
		for range 3 {
			state := filepath.Join(t.TempDir(), "state")
			cfgDir := t.TempDir()
			write(t, filepath.Join(cfgDir, "config.yaml"), []byte(healthyConfig))
			if in.setup != nil {
				in.setup(t, state, cfgDir)
			}
			args, wantOut := testenv.RunArgs(cmp.Or(in.circuit, "c"), nil, "echo", "ran"), "ran\n"
			if in.call {
				args, wantOut = []string{"call", "w"}, "21\n"
			}
			cmd := fbCmd(state, []string{"FUSEBOX_CONFIG=" + filepath.Join(cfgDir, "config.yaml")}, args...)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			timer := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() }) // a FIFO read blocks forever
			p, err := testenv.RunWatched(cmd, nil)
			blocked := !timer.Stop()
			if err != nil {
				t.Fatal(err)
			}
			p.Stdout, p.Stderr = out.String(), errb.String()
			if blocked {
				t.Fatalf("blocked: killed after a minute (stdout %q)\n%s", p.Stdout, p.Stderr)
			}
			if p.Code != in.code || in.code == 0 && p.Stdout != wantOut || !strings.Contains(p.Stderr, in.want) {
				t.Fatalf("exit %d (signal %v) after %s, stdout %q; want exit %d and %q in:\n%s", p.Code, p.Signal, p.Took, p.Stdout, in.code, in.want, p.Stderr)
			}
			runs = append(runs, p)
		}
		slices.SortFunc(runs, func(a, b testenv.Proc) int { return int(a.CPU - b.CPU) })
		med := runs[1]
		for _, p := range runs {
			med.HWM = max(med.HWM, p.HWM)
		}
		return med
	}
	healthy := run(t, input{name: "healthy", want: ""})
	t.Logf("healthy run: %s of CPU in %s, peak RSS %s", healthy.CPU.Round(100*time.Microsecond), healthy.Took.Round(100*time.Microsecond), mib(healthy.HWM))
	healthyCall := run(t, input{name: "healthy call", want: "", call: true})
	t.Logf("healthy call: %s of CPU in %s, peak RSS %s", healthyCall.CPU.Round(100*time.Microsecond), healthyCall.Took.Round(100*time.Microsecond), mib(healthyCall.HWM))
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			p := run(t, in)
			healthy := healthy
			if in.call {
				healthy = healthyCall
			}
			addedRSS, addedCPU := p.HWM-healthy.HWM, p.CPU-healthy.CPU
			t.Logf("%s: exit %d, %s of CPU (%+.1fms) in %s, peak RSS %s (%+.1f MiB)", in.name, p.Code, p.CPU.Round(100*time.Microsecond),
				float64(addedCPU)/float64(time.Millisecond), p.Took.Round(100*time.Microsecond), mib(p.HWM), float64(addedRSS)/(1<<20))
			// Generous bounds, far below the seconds of CPU and the
			// gigabytes an unbounded read of a gigabyte costs.
			if addedRSS > 8<<20 || addedCPU > 250*time.Millisecond {
				t.Errorf("cost %+.1f MiB and %s of CPU more than a healthy run; want a few MiB and milliseconds", float64(addedRSS)/(1<<20), addedCPU)
			}
		})
	}
}
