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
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// fuseboxBin is the binary every test runs, built once by TestMain with
// CGO_ENABLED=0 as users get it.
var fuseboxBin string

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFusebox(m, &fuseboxBin)) }

// proc is one finished fusebox process.
type proc struct {
	code   int            // exit status; -1 when killed by a signal
	signal syscall.Signal // the signal that killed it, or 0
	stdout string
	stderr string
	took   time.Duration
	// maxRSS is rusage's peak resident set, in bytes. On Linux it is the
	// largest of the process's own, its waited-for children's, and the
	// resident set of the process that started it at the time of the exec:
	// os/exec starts children with CLONE_VM|CLONE_VFORK, so exec records the
	// parent's high-water mark as the child's. An upper bound only; hwm is
	// fusebox's own (when watched).
	maxRSS int64
	hwm    int64         // the process's own peak resident set (VmHWM), in bytes; 0 when not watched
	cpu    time.Duration // user and system time: the work it did, whatever else the machine ran
}

// fb runs the fusebox binary with a clean environment: state in stateDir, no
// config unless the test adds one.
func fb(t testing.TB, stateDir string, args ...string) proc {
	t.Helper()
	return fbEnv(t, stateDir, nil, args...)
}

func fbEnv(t testing.TB, stateDir string, env []string, args ...string) proc {
	t.Helper()
	cmd := fbCmd(stateDir, env, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	p := finished(cmd, err, time.Since(start))
	p.stdout, p.stderr = out.String(), errb.String()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("fusebox %q: %v", args, err)
	}
	return p
}

// fbCmd returns the command running fusebox with args, as
// testenv.FuseboxCmd sets it up.
func fbCmd(stateDir string, env []string, args ...string) *exec.Cmd {
	return testenv.FuseboxCmd(fuseboxBin, stateDir, env, args...)
}

// finished describes a command that has been waited for.
func finished(cmd *exec.Cmd, err error, took time.Duration) proc {
	p := proc{code: -1, took: took}
	ps := cmd.ProcessState
	if ps == nil {
		return p
	}
	p.code = ps.ExitCode()
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		p.signal = ws.Signal()
	}
	p.cpu = ps.UserTime() + ps.SystemTime()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		p.maxRSS = int64(ru.Maxrss) * 1024 // kilobytes on Linux (an int32 on 32-bit ARM)
	}
	return p
}

// runWatched runs cmd, polling its VmHWM (the peak resident set of its own
// address space, which exec starts afresh) every millisecond until it exits.
// The peak is kept until exit, so the last reading misses only growth in the
// last millisecond of the process's life.
func runWatched(cmd *exec.Cmd) (proc, error) { return runWatchedStarted(cmd, nil) }

// runWatchedStarted is runWatched, handing the process's pid to started
// (when not nil) once it runs.
func runWatchedStarted(cmd *exec.Cmd, started func(pid int)) (proc, error) {
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return proc{}, err
	}
	if started != nil {
		started(cmd.Process.Pid)
	}
	stop := make(chan struct{})
	peak := make(chan int64, 1)
	go func() {
		var hwm int64
		for {
			hwm = max(hwm, statusField(cmd.Process.Pid, "VmHWM"))
			select {
			case <-stop:
				peak <- hwm
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	err := cmd.Wait()
	close(stop)
	p := finished(cmd, err, time.Since(start))
	p.hwm = <-peak
	return p, nil
}

// statusField returns a kB field of /proc/PID/status in bytes, or 0.
func statusField(pid int, name string) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, name+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func runArgs(name string, policy []string, command ...string) []string {
	args := append([]string{"run"}, policy...)
	args = append(args, name, "--")
	return append(args, command...)
}

// statusOf returns the --json status row of one circuit.
func statusOf(t testing.TB, stateDir, name string) map[string]any {
	t.Helper()
	p := fb(t, stateDir, "status", "--json", name)
	if p.code != 0 {
		t.Fatalf("status: exit %d: %s", p.code, p.stderr)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(p.stdout), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("status --json: %v: %q", err, p.stdout)
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

func waitFor(t testing.TB, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for !cond() {
		if ctx.Err() != nil {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(2 * time.Millisecond)
		runtime.Gosched()
	}
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

// exitMeaning says what a fusebox exit status means, for a failure message.
func exitMeaning(code int) string {
	switch code {
	case -1:
		return "killed by a signal"
	case 124:
		return "the attempt timed out: a bound the machine missed, not a lost update"
	case 75:
		return "skipped: the circuit was open"
	}
	return "the command's or fusebox's own status"
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// decodeState reads a state file strictly: every byte must be one JSON
// object of fusebox.State's fields.
// decodeCounts reads a circuit's counters from the state dir.
func decodeCounts(state, name string) (fusebox.Counts, error) {
	s, err := file.Open(state)
	if err != nil {
		return fusebox.Counts{}, err
	}
	return s.Counts(context.Background(), name)
}

func decodeState(path string) (fusebox.State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return fusebox.State{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var st fusebox.State
	if err := dec.Decode(&st); err != nil {
		return fusebox.State{}, fmt.Errorf("%s: %w", path, err)
	}
	if dec.More() {
		return fusebox.State{}, fmt.Errorf("%s: more than one JSON value", path)
	}
	return st, nil
}

// decodeEvents reads an event log strictly: every line one fusebox.Event,
// the last one ending in a newline. A missing log holds no events.
func decodeEvents(path string) ([]fusebox.Event, error) {
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
	var out []fusebox.Event
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var e fusebox.Event
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

// mountTmpfs mounts a tmpfs with opts on dir until the test ends; a machine
// where that is impossible (not root, no CAP_SYS_ADMIN) skips loudly.
func mountTmpfs(t testing.TB, dir, opts string) {
	t.Helper()
	testenv.MountTmpfs(t, dir, opts)
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
