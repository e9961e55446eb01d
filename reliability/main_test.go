package reliability

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// fuseboxBin is the binary every test runs, built once by TestMain with
// CGO_ENABLED=0 as users get it.
var fuseboxBin string

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFusebox(m, &fuseboxBin)) }

// fb runs the fusebox binary with a clean environment: state in stateDir, no
// config unless the test adds one.
func fb(t testing.TB, stateDir string, args ...string) testenv.Proc {
	t.Helper()
	return fbEnv(t, stateDir, nil, args...)
}

func fbEnv(t testing.TB, stateDir string, env []string, args ...string) testenv.Proc {
	t.Helper()
	return testenv.Run(t, fbCmd(stateDir, env, args...))
}

// fbCmd returns the command running fusebox with args, as
// testenv.FuseboxCmd sets it up.
func fbCmd(stateDir string, env []string, args ...string) *exec.Cmd {
	return testenv.FuseboxCmd(fuseboxBin, stateDir, env, args...)
}

// statusOf returns the --json status row of one circuit.
func statusOf(t testing.TB, stateDir, name string) map[string]any {
	t.Helper()
	p := fb(t, stateDir, "status", "--json", name)
	if p.Code != 0 {
		t.Fatalf("status: exit %d: %s", p.Code, p.Stderr)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(p.Stdout), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("status --json: %v: %q", err, p.Stdout)
	}
	return rows[0]
}

// logLines returns the non-empty lines of s.
func logLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// warnings returns the lines of a text log at WARN or ERROR.
func warnings(stderr string) []string {
	var out []string
	for _, l := range logLines(stderr) {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			out = append(out, l)
		}
	}
	return out
}

// waitProgress waits until done() reaches n, failing only once it has not
// grown for stall: a busy machine is slow, a stuck one makes no progress.
func waitProgress(t testing.TB, what string, n int, stall time.Duration, done func() int) {
	t.Helper()
	last, since := -1, time.Now()
	for {
		d := done()
		if d >= n {
			return
		}
		if d > last {
			last, since = d, time.Now()
		} else if time.Since(since) > stall {
			t.Fatalf("%d of %d %s, and no more for %s: stuck", d, n, what, stall)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// decodeState reads a state file strictly: every byte must be one JSON
// object of breaker.State's fields.
// decodeCounts reads a circuit's counters from the state dir.
func decodeCounts(state, name string) (fusebox.Counts, error) {
	s, err := file.Open(state)
	if err != nil {
		return fusebox.Counts{}, err
	}
	return s.Counts(context.Background(), name)
}

func decodeState(path string) (breaker.State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return breaker.State{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var st breaker.State
	if err := dec.Decode(&st); err != nil {
		return breaker.State{}, fmt.Errorf("%s: %w", path, err)
	}
	if dec.More() {
		return breaker.State{}, fmt.Errorf("%s: more than one JSON value", path)
	}
	return st, nil
}

// decodeEvents reads an event log strictly: every line one breaker.Event,
// the last one ending in a newline. A missing log holds no events.
func decodeEvents(path string) ([]breaker.Event, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		return nil, fmt.Errorf("%s does not end in a newline", path)
	}
	var out []breaker.Event
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var e breaker.Event
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("%s:%d: %w: %q", path, n, err, sc.Bytes())
		}
		if e.Time.IsZero() || e.Kind == "" || e.Circuit == "" {
			return nil, fmt.Errorf("%s:%d: incomplete event %q", path, n, sc.Bytes())
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// tree lists every path under dir (relative, sorted), or nil when dir does
// not exist.
func tree(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path == dir {
			return fs.SkipAll
		}
		if err != nil {
			return err
		}
		if path != dir {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// leftovers returns the temporary and moved-aside files under dir.
func leftovers(t testing.TB, dir string) (temps, corrupt []string) {
	t.Helper()
	for _, p := range tree(t, dir) {
		base := filepath.Base(p)
		switch {
		case strings.HasPrefix(base, ".") && strings.Contains(base, ".tmp-"):
			temps = append(temps, filepath.Join(dir, p))
		case strings.Contains(base, ".corrupt-"):
			corrupt = append(corrupt, filepath.Join(dir, p))
		}
	}
	return temps, corrupt
}

// groupMembers lists the live (not zombie) processes in process group pgid.
func groupMembers(pgid int) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			out = append(out, fmt.Sprintf("%d %s", pid, s[:i+1]))
		}
	}
	return out
}

// needRoot skips loudly unless the test runs as root.
func needRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "%s needs root", why)
	}
}

// envInt returns the integer in the environment variable name, or def.
func envInt(t testing.TB, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("$%s=%q: want a positive number", name, v)
	}
	return n
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
