package reliability

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// promptExit bounds how long fusebox may take to exit after its command
// ended or a signal came. The figure is 100ms, and the logged times
// are a few milliseconds (docs/reliability.md); the bound is looser so a
// loaded CI machine does not fail the test, and still far below the 1s kill
// grace or the 20s backoff that a wrong implementation would wait out.
const promptExit = 500 * time.Millisecond

// trappingChild is a command that, sent SIGHUP, SIGINT, SIGQUIT or SIGTERM,
// writes which in $1/got, takes 200ms to finish, writes the time it ends in
// $1/end and exits 9. It leaves a grandchild (sleep 30, under a shell that
// names $1, so checkNoneLeft finds it) in its process group, which a
// non-interactive shell starts with SIGINT and SIGQUIT ignored: only
// fusebox's sweep of the group ends it. The grandchild's output goes to $2
// (/dev/null, or nowhere else: it then holds the command's stdout). Left
// alone, it ends by itself after 5s, exit 3, writing $1/alone.
const trappingChild = `d=$1
for s in HUP INT QUIT TERM; do
  trap "echo $s > \"\$d/got\"; sleep 0.2; date +%s%N > \"\$d/end\"; exit 9" $s
done
echo $$ > "$d/pgid"
if [ "$2" ]; then sh -c 'sleep 30; exit 0' "$d" >"$2" 2>&1 & else sh -c 'sleep 30; exit 0' "$d" & fi
touch "$d/started"
i=0; while [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done
touch "$d/alone"; exit 3`

// signals are those that end fusebox, each tested while a command runs,
// during a backoff and during a probe. SIGPIPE, which ends it only when
// its own output is gone, has TestBrokenOutputDuringProbe.
var signals = []struct {
	sig  syscall.Signal
	name string
	code int
}{{syscall.SIGHUP, "HUP", 129}, {syscall.SIGINT, "INT", 130}, {syscall.SIGQUIT, "QUIT", 131}, {syscall.SIGTERM, "TERM", 143}}

// TestSignalDuringRunningChild: the signal reaches the command, fusebox
// waits for it and exits within 100ms of its end with 128+signal, the
// command's process group is empty, and the interrupted call counted as
// neither success nor failure.
func TestSignalDuringRunningChild(t *testing.T) {
	for _, s := range signals {
		t.Run(s.name, func(t *testing.T) { signalRunningChild(t, s.sig, s.name, s.code, "/dev/null") })
	}
}

// TestSignalWithGrandchildHoldingStdout is TestSignalDuringRunningChild with
// the grandchild writing to the command's stdout, as `cmd &` in a script
// does.
func TestSignalWithGrandchildHoldingStdout(t *testing.T) {
	for _, s := range signals {
		t.Run(s.name, func(t *testing.T) { signalRunningChild(t, s.sig, s.name, s.code, "") })
	}
}

func signalRunningChild(t *testing.T, sig syscall.Signal, name string, code int, grandchildOut string) {
	state := filepath.Join(t.TempDir(), "state")
	d := t.TempDir()
	cmd := fbCmd(state, nil, testenv.RunArgs("c", nil, "sh", "-c", trappingChild, "sh", d, grandchildOut)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the command to start", func() bool { return exists(filepath.Join(d, "started")) })
	cmd.Process.Signal(sig)
	err := cmd.Wait()
	exited := time.Now()
	p := testenv.Finished(cmd, 0)
	if p.Code != code {
		t.Fatalf("exit %d, want %d\n%s", p.Code, code, stderr.String())
	}
	if got := strings.TrimSpace(readString(t, filepath.Join(d, "got"))); got != name {
		t.Errorf("the command got %q, want %s forwarded", got, name)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(readString(t, filepath.Join(d, "end"))), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	after := exited.Sub(time.Unix(0, ns))
	if after < 0 || after > promptExit {
		t.Errorf("fusebox exited %s after its command ended, want within %s (and not before)", after, promptExit)
	}
	t.Logf("SIG%s: exit %d, %s after the command ended", name, p.Code, after.Round(100*time.Microsecond))
	checkGroupEmpty(t, d)
	checkNoneLeft(t, d)
	checkInterruptedState(t, state, 0)
}

// TestSignalDuringBackoff: interrupted while waiting to retry, fusebox
// exits at once with 128+signal; the failed attempt stays counted.
func TestSignalDuringBackoff(t *testing.T) {
	for _, s := range signals {
		t.Run(s.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			d := t.TempDir()
			cmd := fbCmd(state, nil, testenv.RunArgs("c", []string{"-v", "--backoff", "20s", "--jitter", "none"},
				"sh", "-c", `echo $$ > "$1/pgid"; exit 1`, "sh", d)...)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var logged bytes.Buffer
			waiting := make(chan struct{})
			go func() {
				r := bufio.NewReader(io.TeeReader(stderr, &logged))
				for {
					line, err := r.ReadString('\n')
					if strings.Contains(line, "waiting before retry") {
						close(waiting)
						io.Copy(io.Discard, r)
						return
					}
					if err != nil {
						return
					}
				}
			}()
			select {
			case <-waiting:
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				t.Fatal("fusebox never started its backoff")
			}
			sent := time.Now()
			cmd.Process.Signal(s.sig)
			err = cmd.Wait()
			took := time.Since(sent)
			p := testenv.Finished(cmd, took)
			if p.Code != s.code {
				t.Fatalf("exit %d, want %d\n%s", p.Code, s.code, logged.String())
			}
			if took > promptExit {
				t.Errorf("took %s to exit from a 20s backoff, want under %s", took, promptExit)
			}
			t.Logf("SIG%s during a 20s backoff: exit %d after %s", s.name, p.Code, took.Round(100*time.Microsecond))
			checkGroupEmpty(t, d)
			checkInterruptedState(t, state, 1)
		})
	}
}

// TestSignalDuringProbe: an interrupted half-open probe gives its lease back
// at once, so the next call probes instead of waiting the lease out (12s
// here).
func TestSignalDuringProbe(t *testing.T) {
	for _, s := range signals {
		t.Run(s.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			policy := []string{"--attempts", "1", "--trip-after", "1", "--open-for", "100ms", "--timeout", "10s"}
			if p := fb(t, state, testenv.RunArgs("c", policy, "false")...); p.Code != 1 {
				t.Fatalf("tripping run: exit %d\n%s", p.Code, p.Stderr)
			}
			time.Sleep(150 * time.Millisecond)
			d := t.TempDir()
			cmd := fbCmd(state, nil, testenv.RunArgs("c", policy, "sh", "-c", trappingChild, "sh", d, "/dev/null")...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			testenv.WaitFor(t, "the probe to start", func() bool { return exists(filepath.Join(d, "started")) })
			if p := fb(t, state, testenv.RunArgs("c", policy, "true")...); p.Code != 75 {
				t.Fatalf("a second caller during the probe: exit %d, want 75", p.Code)
			}
			cmd.Process.Signal(s.sig)
			cmd.Wait()
			if p := testenv.Finished(cmd, 0); p.Code != s.code {
				t.Fatalf("exit %d, want %d\n%s", p.Code, s.code, stderr.String())
			}
			checkGroupEmpty(t, d)
			checkNoneLeft(t, d)
			st, err := decodeState(filepath.Join(state, "c.json"))
			c, cerr := decodeCounts(state, "c")
			if err != nil || cerr != nil || len(st.Probes) != 0 || c.Failures != 1 {
				t.Fatalf("state after the interrupted probe: %+v, %+v, %v, %v; want no lease held and the one failure", st, c, err, cerr)
			}
			if p := fb(t, state, testenv.RunArgs("c", policy, "true")...); p.Code != 0 {
				t.Fatalf("the next call: exit %d, want 0 (it probes)\n%s", p.Code, p.Stderr)
			}
			if st := statusOf(t, state, "c"); st["state"] != "closed" {
				t.Errorf("state %v after a successful probe, want closed", st["state"])
			}
		})
	}
}

// TestBrokenOutputDuringProbe: fusebox's stdout and stderr are a pipe
// nobody reads any more (`fusebox run … 2>&1 | head -1` after head exited).
// Its first write there — the INFO line of the probe, with -v — raises SIGPIPE, which
// by Go's default would kill fusebox holding the probe lease, its command
// unstarted or running on. Now the command's group gets SIGPIPE, the lease
// is given back, and fusebox exits 141 with nothing of the command left.
func TestBrokenOutputDuringProbe(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	policy := []string{"--attempts", "1", "--trip-after", "1", "--open-for", "100ms", "--timeout", "10s"}
	if p := fb(t, state, testenv.RunArgs("c", policy, "false")...); p.Code != 1 {
		t.Fatalf("tripping run: exit %d\n%s", p.Code, p.Stderr)
	}
	time.Sleep(150 * time.Millisecond)
	d := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	// -v: the probe's INFO line is the write that meets the closed pipe.
	cmd := fbCmd(state, nil, append([]string{"-v"}, testenv.RunArgs("c", policy, "sh", "-c", trappingChild, "sh", d, "/dev/null")...)...)
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	cmd.Wait()
	p := testenv.Finished(cmd, 0)
	if exists(filepath.Join(d, "alone")) {
		t.Fatal("fusebox wrote nothing to its output during the probe: this test needs a write to the closed pipe")
	}
	if p.Code != 141 {
		t.Fatalf("exit %d (signal %v), want 141", p.Code, p.Signal)
	}
	checkNoneLeft(t, d)
	st, err := decodeState(filepath.Join(state, "c.json"))
	if err != nil || len(st.Probes) != 0 {
		t.Fatalf("state after the probe: %+v, %v; want no lease held", st, err)
	}
	if p := fb(t, state, testenv.RunArgs("c", policy, "true")...); p.Code != 0 {
		t.Fatalf("the next call: exit %d, want 0 (it probes)\n%s", p.Code, p.Stderr)
	}
}

// checkNoneLeft checks that no process naming d in its command line (the
// command and its grandchild, whether or not they got as far as writing
// their group) is alive: nothing was orphaned.
func checkNoneLeft(t *testing.T, d string) {
	t.Helper()
	// A process left behind is a sleep 30; a killed one may take a while
	// to be reaped on a busy machine.
	deadline := time.Now().Add(20 * time.Second)
	for {
		left := testenv.ProcessesNaming(d)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("%d processes naming %s still alive 20s after fusebox exited: %v", len(left), d, left)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkGroupEmpty checks that the process group of the command that wrote
// its pid in d/pgid has no live member left.
func checkGroupEmpty(t *testing.T, d string) {
	t.Helper()
	pgid, err := strconv.Atoi(strings.TrimSpace(readString(t, filepath.Join(d, "pgid"))))
	if err != nil {
		t.Fatal(err)
	}
	// A member left behind is a sleep 30; a killed one may take a while
	// to be reaped on a busy machine.
	deadline := time.Now().Add(20 * time.Second)
	for {
		left := groupMembers(pgid)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, l := range left {
				if pid, err := strconv.Atoi(strings.Fields(l)[0]); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			t.Fatalf("process group %d still has members 20s after fusebox exited: %v", pgid, left)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkInterruptedState checks that the state file and event log parse and
// hold failures counted failures and nothing else.
func checkInterruptedState(t *testing.T, state string, failures int) {
	t.Helper()
	st, err := decodeState(filepath.Join(state, "c.json"))
	if err != nil && (failures > 0 || !os.IsNotExist(err)) {
		t.Fatal(err)
	}
	c, err := decodeCounts(state, "c")
	if err != nil {
		t.Fatal(err)
	}
	if c.Failures != uint64(failures) || c.Successes != 0 || st.Phase == breaker.Open || len(st.Probes) > 0 {
		t.Errorf("state %+v, counts %+v; want %d failure(s), no success, closed, no lease", st, c, failures)
	}
	events, err := decodeEvents(filepath.Join(state, "events", "c.jsonl"))
	if err != nil || len(events) != failures {
		t.Errorf("events %+v, %v; want %d", events, err, failures)
	}
	if temps, corrupt := leftovers(t, state); len(temps)+len(corrupt) > 0 {
		t.Errorf("left behind: %v %v", temps, corrupt)
	}
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestClosedStdoutExits141: `fusebox run c -- echo ran | head -c0`: the
// answer cannot be written, and fusebox exits 141 as a shell reports a
// command SIGPIPE ended, after recording the attempt (it succeeded).
func TestClosedStdoutExits141(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	cmd := fbCmd(state, nil, testenv.RunArgs("c", nil, "echo", "ran")...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	cmd.Wait()
	p := testenv.Finished(cmd, 0)
	if p.Code != 141 {
		t.Fatalf("exit %d (signal %v), want 141\n%s", p.Code, p.Signal, stderr.String())
	}
	if c, err := decodeCounts(state, "c"); err != nil || c.Successes != 1 {
		t.Errorf("counts %+v, %v; want the one success", c, err)
	}
}

// TestSignalDuringCall: fusebox call watches for signals only once it makes
// a request (a call every open circuit skips installs no handler), so a
// signal while the request hangs must still end the call with 128+signal,
// the probe lease of the half-open circuit it held given back, and the
// next call skipped by nothing: it probes.
func TestSignalDuringCall(t *testing.T) {
	for _, s := range signals {
		t.Run(s.name, func(t *testing.T) {
			arrived := make(chan struct{}, 1)
			release := make(chan struct{})
			var healthy atomic.Bool
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if healthy.Load() {
					fmt.Fprintln(w, "ok")
					return
				}
				select {
				case arrived <- struct{}{}:
				default:
				}
				select { // hang until the test ends, or the client goes
				case <-release:
				case <-r.Context().Done():
				}
			}))
			defer srv.Close()
			defer close(release)
			state := filepath.Join(t.TempDir(), "state")
			args := []string{"call", "--url", srv.URL, "--attempts", "1", "--timeout", "20s", "api"}
			if p := fb(t, state, "trip", "--new", "api", "--for", "1ms"); p.Code != 0 {
				t.Fatalf("trip: exit %d\n%s", p.Code, p.Stderr)
			}
			time.Sleep(5 * time.Millisecond) // the trip's 1ms ends: the next call probes
			cmd := fbCmd(state, nil, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-arrived:
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				t.Fatalf("the request never reached the upstream\n%s", stderr.String())
			}
			sent := time.Now()
			cmd.Process.Signal(s.sig)
			err := cmd.Wait()
			p := testenv.Finished(cmd, time.Since(sent))
			if p.Code != s.code || p.Signal != 0 {
				t.Fatalf("exit %d (signal %v), want %d: the call must catch it\n%s", p.Code, p.Signal, s.code, stderr.String())
			}
			if p.Took > promptExit {
				t.Errorf("took %s to exit from a hanging request, want under %s", p.Took, promptExit)
			}
			st, err := decodeState(filepath.Join(state, "api.json"))
			if err != nil || len(st.Probes) != 0 {
				t.Fatalf("state after the interrupted call: %+v, %v; want no probe lease held", st, err)
			}
			healthy.Store(true)
			if p := fb(t, state, args...); p.Code != 0 {
				t.Fatalf("the next call: exit %d, want 0 (it probes)\n%s", p.Code, p.Stderr)
			}
		})
	}
}
