package reliability

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/mem"
)

// hostileNames are circuit names that must be refused: each would escape the
// state dir, collide with a file fusebox keeps, or be unreadable in ls.
var hostileNames = []string{
	"a/b", "../etc/passwd", "..", ".", "/abs", "a b", "tab\tname", "new\nline",
	strings.Repeat("a", 65), strings.Repeat("x", 1000),
	"ünïcode", "名前", "emoji-🔥", "$(touch pwned)", "*", "a\\b", "",
}

// TestHostileCircuitNames: every command that takes a name refuses each
// hostile one with a usage error (64) and writes nothing.
func TestHostileCircuitNames(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	marker := filepath.Join(t.TempDir(), "ran")
	for _, name := range hostileNames {
		for _, args := range [][]string{
			testenv.RunArgs(name, nil, "touch", marker),
			{"call", "--url", "http://127.0.0.1:9/", name},
			{"status", name},
			{"status", "--json", name},
			{"trip", name},
			{"reset", name},
		} {
			p := fb(t, state, args...)
			if p.Code != 64 || p.Stdout != "" || !strings.HasPrefix(p.Stderr, "fusebox: ") {
				t.Errorf("fusebox %q: exit %d, stdout %q, stderr %q; want a usage error (64)", args, p.Code, p.Stdout, p.Stderr)
			}
			if strings.Count(p.Stderr, "\n") > 2 {
				t.Errorf("fusebox %q: the error runs over lines: %q", args, p.Stderr)
			}
		}
	}
	if exists(marker) {
		t.Error("a command ran under a hostile name")
	}
	if exists(state) {
		t.Errorf("the state dir was created: %v", tree(t, state))
	}
	if p := fb(t, state, testenv.RunArgs(strings.Repeat("a", 64), nil, "true")...); p.Code != 0 {
		t.Errorf("a name of 64 characters: exit %d, want 0 (the longest allowed)\n%s", p.Code, p.Stderr)
	}
}

// TestHostileCircuitNamesInTheLibrary covers what cannot be passed in argv
// (a NUL byte): Do and Check refuse such names before any store sees them,
// and the file store refuses them itself.
func TestHostileCircuitNamesInTheLibrary(t *testing.T) {
	names := append([]string{"a\x00b", "\x00", "ok\x00/../../etc"}, hostileNames...)
	dir := filepath.Join(t.TempDir(), "state")
	fs, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, store := range []fusebox.Admin{fs, mem.New()} {
		c := fusebox.New(store)
		for _, name := range names {
			if err := fusebox.ValidateName(name); err == nil {
				t.Errorf("ValidateName(%q) = nil", name)
			} else if strings.ContainsAny(err.Error(), "\x00\n") {
				t.Errorf("ValidateName(%q) = %q: the message holds a raw control byte", name, err)
			}
			ran := false
			err := c.Do(ctx, name, func(context.Context) error { ran = true; return nil })
			if err == nil || ran {
				t.Errorf("Do(%q) = %v, ran %v; want an error and nothing run", name, err, ran)
			}
			if store != fusebox.Admin(fs) {
				continue // the in-memory store has no files to escape from
			}
			if _, err := store.Load(ctx, name); err == nil {
				t.Errorf("Load(%q) succeeded", name)
			}
			if _, err := store.Update(ctx, name, func(st *breaker.State) ([]breaker.Event, bool) { return nil, true }); err == nil {
				t.Errorf("Update(%q) succeeded", name)
			}
			if err := store.Count(ctx, name, fusebox.Counts{Skips: 1}); err == nil {
				t.Errorf("Count(%q) succeeded", name)
			}
			if err := fs.SaveAnswer(ctx, name, answers.Answer{}); err == nil {
				t.Errorf("SaveAnswer(%q) succeeded", name)
			}
		}
	}
	if got := tree(t, dir); len(got) > 0 {
		t.Errorf("the store wrote %v", got)
	}
}

// TestArgumentsAreExecutedLiterally: a command's arguments reach it byte for
// byte, never through a shell, and arguments after the circuit name are the
// command's even when they look like fusebox's flags.
func TestArgumentsAreExecutedLiterally(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	m := func(n string) string { return filepath.Join(dir, "pwned-"+n) }
	args := []string{
		"a b", "  leading and trailing  ", `"double quoted"`, `'single quoted'`, `it's`,
		"$(touch " + m("1") + ")", "`touch " + m("2") + "`", "; touch " + m("3"), "&& touch " + m("4"),
		"| tee " + m("5"), "> " + m("6"), "$HOME", "${PATH}", "*", "~", `\`, "line1\nline2", "",
		"--state=" + m("7"), "-v", "--", "NAME=value", "ünïcode 名前",
	}
	p := fb(t, state, testenv.RunArgs("literal", nil, append([]string{"printf", "[%s]\n"}, args...)...)...)
	if p.Code != 0 {
		t.Fatalf("exit %d\n%s", p.Code, p.Stderr)
	}
	var want strings.Builder
	for _, a := range args {
		want.WriteString("[" + a + "]\n")
	}
	if p.Stdout != want.String() {
		t.Errorf("the command got\n%s\nwant\n%s", p.Stdout, want.String())
	}

	// No "--": everything after NAME is still the command's.
	p = fb(t, state, "run", "literal", "printf", "%s\n", "--state="+m("8"), "--attempts", "9")
	if p.Code != 0 || p.Stdout != "--state="+m("8")+"\n--attempts\n9\n" {
		t.Errorf("exit %d, stdout %q: flags after the name were not left to the command\n%s", p.Code, p.Stdout, p.Stderr)
	}

	// A command line is not split: "echo hi" is one (missing) program.
	if p := fb(t, state, testenv.RunArgs("literal", nil, "echo hi")...); p.Code != 127 || p.Stdout != "" {
		t.Errorf(`"echo hi": exit %d, stdout %q; want 127 (no such command), not a shell running it`, p.Code, p.Stdout)
	}

	// A program whose path holds spaces and quotes runs as it is named.
	odd := filepath.Join(dir, `my dir`, `it's "here"`)
	if err := os.MkdirAll(odd, 0o755); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(odd, "say $(id)")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho \"ok:$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if p := fb(t, state, testenv.RunArgs("literal", nil, prog, "x y")...); p.Code != 0 || p.Stdout != "ok:x y\n" {
		t.Errorf("exit %d, stdout %q; want the program at %q run\n%s", p.Code, p.Stdout, prog, p.Stderr)
	}

	for n := range 9 {
		if exists(m(string(rune('0' + n)))) {
			t.Errorf("%s exists: an argument was interpreted", m(string(rune('0'+n))))
		}
	}
	if st := statusOf(t, state, "literal"); st["total_successes"] != float64(3) {
		t.Errorf("status %v, want 3 successes", st)
	}
}

// TestCommandLeavingABackgroundProcess: a command that starts a background
// process and exits has ended; its attempt is over. fusebox must return at
// once, not wait for that process, and end it (a command's descendants end
// with it, docs/run.md): the test kills it only should fusebox wait for
// it, after a minute, which the check then reports.
func TestCommandLeavingABackgroundProcess(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	for _, stream := range [][]string{nil, {"--stream"}} {
		dir := t.TempDir()
		pidFile := filepath.Join(dir, "pid")
		policy := append([]string{"--attempts", "1", "--timeout", "10m"}, stream...)
		// stdout is a file: a pipe would keep this test waiting for the
		// background process too, whatever fusebox does.
		out, err := os.Create(filepath.Join(dir, "stdout"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := fbCmd(state, nil, testenv.RunArgs("bg", policy, "sh", "-c", `setsid sleep 600 & echo $! > "$1"; echo hi`, "sh", pidFile)...)
		cmd.Stdout = out
		bgPid := func() int { // the background process's, written before the command exits
			b, err := os.ReadFile(pidFile)
			if err != nil || len(b) == 0 || b[len(b)-1] != '\n' {
				return 0
			}
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			return pid
		}
		stopBG := func() {
			if pid := bgPid(); pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		guard := time.AfterFunc(time.Minute, stopBG) // fusebox waits for it: release it, to fail below
		start := time.Now()
		err = cmd.Run()
		waited := !guard.Stop()
		p := testenv.Finished(cmd, time.Since(start))
		out.Close()
		got, _ := os.ReadFile(out.Name())
		pid := bgPid()
		if pid == 0 {
			t.Fatalf("%v: the command exited without writing its background process's pid: %s", stream, p.Stderr)
		}
		alive := syscall.Kill(pid, 0) == nil
		stopBG()
		if waited {
			t.Errorf("%v: fusebox returned only once the background process had ended (after %s)", stream, p.Took.Round(time.Millisecond))
		}
		if alive && runtime.GOOS == "linux" {
			t.Errorf("%v: the background process %d outlived the run", stream, pid)
		}
		if p.Code != 0 || string(got) != "hi\n" {
			t.Errorf("%v: exit %d, stdout %q; want 0 and hi", stream, p.Code, got)
		}
	}
}
