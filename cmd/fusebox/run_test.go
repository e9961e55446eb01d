package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// fast policy flags so process tests take milliseconds, not minutes.
var fastPolicy = []string{"--backoff", "1ms", "--max-delay", "5ms"}

func TestRunFailingCommandTripsAndNextRunSkipsWithoutRunning(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	p := inproc(t, state, testenv.RunArgs("zigbee2mqtt", append([]string{"-v"}, fastPolicy...), "sh", "-c", "echo trying; exit 3")...)
	if p.Code != 3 {
		t.Fatalf("exit = %d, want the command's own 3; stderr:\n%s", p.Code, p.Stderr)
	}
	if got := countLines(p.Stderr, "attempt failed"); got != 3 {
		t.Errorf("logged %d failed attempts, want 3:\n%s", got, p.Stderr)
	}
	if !strings.Contains(p.Stderr, "circuit opened") || !strings.Contains(p.Stderr, "exit status 3") {
		t.Errorf("stderr does not say the circuit opened and why:\n%s", p.Stderr)
	}
	if p.Stdout != "trying\n" {
		t.Errorf("stdout = %q, want only the last attempt's output once", p.Stdout)
	}
	if st := statusOf(t, state, "zigbee2mqtt"); st["state"] != "open" || st["last_failure"] != "exit status 3" {
		t.Errorf("status = %v, want open with the reason", st)
	}

	// The skip runs as a process, as cron runs it.
	marker := filepath.Join(t.TempDir(), "ran")
	p = fb(t, state, testenv.RunArgs("zigbee2mqtt", []string{"-v"}, "touch", marker)...)
	if p.Code != exitOpen {
		t.Fatalf("exit = %d, want 75 (circuit open); stderr:\n%s", p.Code, p.Stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran although the circuit is open")
	}
	if !strings.Contains(p.Stderr, "skipped") {
		t.Errorf("stderr does not log the skip:\n%s", p.Stderr)
	}
	if st := statusOf(t, state, "zigbee2mqtt"); st["skipped"] != float64(1) {
		t.Errorf("skipped = %v, want 1", st["skipped"])
	}
}

func TestRunSucceedsQuietlyAndPrintsOnlyTheLastAttempt(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	p := inproc(t, state, testenv.RunArgs("healthy", fastPolicy, "echo", "hello")...)
	if p.Code != 0 || p.Stdout != "hello\n" || p.Stderr != "" {
		t.Fatalf("got exit %d, stdout %q, stderr %q; want 0, hello, and nothing on stderr (cron sends no mail)", p.Code, p.Stdout, p.Stderr)
	}

	// Fails once, then succeeds: the failed attempt's stdout is discarded.
	flag := filepath.Join(t.TempDir(), "flag")
	script := fmt.Sprintf(`if [ -e %[1]s ]; then echo second; else touch %[1]s; echo first; exit 1; fi`, flag)
	p = inproc(t, state, testenv.RunArgs("flaky", fastPolicy, "sh", "-c", script)...)
	if p.Code != 0 || p.Stdout != "second\n" {
		t.Fatalf("got exit %d, stdout %q; want 0 and only the second attempt's output\n%s", p.Code, p.Stdout, p.Stderr)
	}
	st := statusOf(t, state, "flaky")
	if st["total_successes"] != float64(1) || st["total_failures"] != float64(1) || st["state"] != "closed" {
		t.Errorf("status = %v", st)
	}
}

func TestRunArgumentsAreExecutedLiterallyNeverByAShell(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	args := []string{"a b", `"quoted"`, "$(touch /tmp/fusebox-pwned)", "; rm -rf /", "`id`"}
	p := inproc(t, state, testenv.RunArgs("literal", nil, append([]string{"printf", "%s\n"}, args...)...)...)
	if p.Code != 0 {
		t.Fatalf("exit %d: %s", p.Code, p.Stderr)
	}
	if want := strings.Join(args, "\n") + "\n"; p.Stdout != want {
		t.Errorf("stdout = %q, want %q", p.Stdout, want)
	}
	if _, err := os.Stat("/tmp/fusebox-pwned"); err == nil {
		os.Remove("/tmp/fusebox-pwned")
		t.Fatal("an argument was run by a shell")
	}
}

// TestRunTimeoutExits124AndKillsTheProcessGroup: the grandchild ignores
// SIGTERM, and must still be gone afterwards. It is found by the marker in
// its command line, so the test holds whether or not a busy machine started
// it within the 200ms.
func TestRunTimeoutExits124AndKillsTheProcessGroup(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	marker := filepath.Join(t.TempDir(), "grandchild")
	script := fmt.Sprintf(`sh -c 'trap "" TERM; sleep 30; : %s' & wait`, marker)
	p := inproc(t, state, testenv.RunArgs("slow", []string{"--attempts", "1", "--timeout", "200ms"}, "sh", "-c", script)...)
	if p.Code != exitTimeout {
		t.Fatalf("exit = %d, want 124; stderr:\n%s", p.Code, p.Stderr)
	}
	if !strings.Contains(p.Stderr, "timeout after 200ms") {
		t.Errorf("stderr does not name the timeout:\n%s", p.Stderr)
	}
	// A grandchild left behind lives 30s; a killed one is reaped soon.
	testenv.WaitFor(t, "the grandchild to be killed", func() bool { return len(testenv.ProcessesNaming(marker)) == 0 })
}

func TestRunRetryOnExitLimitsRetries(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	p := inproc(t, state, testenv.RunArgs("picky", append([]string{"-v", "--retry-on-exit", "75"}, fastPolicy...), "sh", "-c", "exit 2")...)
	if p.Code != 2 || countLines(p.Stderr, "attempt failed") != 1 {
		t.Fatalf("exit %d, want 2 after one attempt (2 is not retryable):\n%s", p.Code, p.Stderr)
	}
}

func TestRunCommandNotFoundExits127WithoutTripping(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	for range 4 {
		p := inproc(t, state, testenv.RunArgs("typo", fastPolicy, "no-such-command-fusebox")...)
		if p.Code != exitNotFound {
			t.Fatalf("exit = %d, want 127:\n%s", p.Code, p.Stderr)
		}
	}
	if st := statusOf(t, state, "typo"); st["state"] != "closed" {
		t.Errorf("a missing command tripped the circuit: %v", st)
	}
}

func TestRunUsageErrors(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	for _, args := range [][]string{
		{"run", "onlyname"},
		{"run", "bad/name", "--", "true"},
		{"run", "--attempts", "-1", "x", "--", "true"},
		{"run", "--jitter", "wobbly", "x", "--", "true"},
		{"run", "--nope", "x", "--", "true"},
		{"trip"},
		{"nonsense-command"},
	} {
		p := inproc(t, state, args...)
		if p.Code != exitUsage {
			t.Errorf("fusebox %v: exit %d, want 64; stderr %q", args, p.Code, p.Stderr)
			continue
		}
		if lines := strings.Count(strings.TrimSpace(p.Stderr), "\n") + 1; lines > 2 || !strings.HasPrefix(p.Stderr, "fusebox: ") {
			t.Errorf("fusebox %v: want a one-line error, got %q", args, p.Stderr)
		}
	}
}

// TestRunExactlyOneOfTwentyConcurrentRunsProbes: the probe's command blocks
// until every one of the 20 runs has decided (run its command or exited),
// so the other 19 find the probe held however slow the machine is.
func TestRunExactlyOneOfTwentyConcurrentRunsProbes(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	// The probe's lease (timeout + 2s) outlasts the wait for the 20 below.
	policy := []string{"--attempts", "1", "--open-for", "300ms", "--trip-after", "1", "--timeout", "2m"}
	if p := inproc(t, state, testenv.RunArgs("bridge", policy, "false")...); p.Code != 1 {
		t.Fatalf("tripping run: exit %d:\n%s", p.Code, p.Stderr)
	}
	time.Sleep(350 * time.Millisecond) // the open period ends
	if st := statusOf(t, state, "bridge"); st["state"] != "half_open" {
		t.Fatalf("status after open_for = %v, want half_open without any call", st["state"])
	}

	probeRace(t, 20, func(_ int, command string) int {
		return fb(t, state, testenv.RunArgs("bridge", policy, "sh", "-c", command)...).Code
	})
	if st := statusOf(t, state, "bridge"); st["state"] != "closed" {
		t.Errorf("after a successful probe: %v, want closed", st["state"])
	}
}

func TestRunProbeKilledWithSIGKILLDoesNotWedgeTheCircuit(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	policy := []string{"--attempts", "1", "--open-for", "100ms", "--trip-after", "1", "--timeout", "300ms"}
	if p := inproc(t, state, testenv.RunArgs("wedge", policy, "false")...); p.Code != 1 {
		t.Fatalf("tripping run: exit %d", p.Code)
	}
	time.Sleep(150 * time.Millisecond)

	started := filepath.Join(t.TempDir(), "started")
	probe := fbCmd(state, nil, testenv.RunArgs("wedge", policy, "sh", "-c", "touch "+started+"; exec sleep 30")...)
	leased := time.Now() // the lease is taken after this
	if err := probe.Start(); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the probe to start", func() bool { _, err := os.Stat(started); return err == nil })
	probe.Process.Kill() // SIGKILL: fusebox gets no chance to release the lease
	probe.Wait()

	// The lease is the attempt timeout plus a slack of 2s. A call that ends
	// within it must find it held; one that a busy machine ran later may
	// find it expired, which is what the loop below waits for anyway.
	const lease = 300*time.Millisecond + 2*time.Second
	if p := fb(t, state, testenv.RunArgs("wedge", policy, "true")...); p.Code != exitOpen && time.Since(leased) < lease {
		t.Fatalf("while the dead probe's lease lasts: exit %d, want 75", p.Code)
	}
	// A wedged circuit would stay so for ever: a minute past the lease is
	// slack for a busy machine.
	deadline := leased.Add(lease + time.Minute)
	for {
		p := fb(t, state, testenv.RunArgs("wedge", policy, "true")...)
		if p.Code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("circuit still wedged %s after the probe was killed (its lease lasts %s): exit %d\n%s", time.Since(leased).Round(time.Second), lease, p.Code, p.Stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st := statusOf(t, state, "wedge"); st["state"] != "closed" {
		t.Errorf("state = %v, want closed", st["state"])
	}
}

// TestRunFiftyConcurrentRunsLoseNoCount: every run that exits 0 is counted.
// The attempts' timeout is long: a busy machine may take seconds to run
// true, and a timed-out attempt (124) is a bound missed, not a lost count.
func TestRunFiftyConcurrentRunsLoseNoCount(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	var wg sync.WaitGroup
	var succeeded atomic.Int64
	errs := make(chan string, 50)
	for range 50 {
		wg.Go(func() {
			p := fb(t, state, testenv.RunArgs("busy", []string{"--timeout", "10m", "--deadline", "10m"}, "true")...)
			if p.Code == 0 {
				succeeded.Add(1)
			}
			if p.Code != 0 || p.Stderr != "" {
				errs <- fmt.Sprintf("exit %d (%s): %s", p.Code, testenv.ExitMeaning(p.Code), p.Stderr)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if st := statusOf(t, state, "busy"); st["total_successes"] != float64(succeeded.Load()) {
		t.Fatalf("total_successes = %v, but %d runs exited 0: lost counts", st["total_successes"], succeeded.Load())
	}
}

func TestRunFailsOpenOnACorruptStateFile(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(state, "garage.json"), []byte("{\"state\": \"op\x00\x00"), 0o600)
	p := fb(t, state, testenv.RunArgs("garage", nil, "echo", "ran")...)
	if p.Code != 0 || p.Stdout != "ran\n" {
		t.Fatalf("exit %d, stdout %q: the command must run\n%s", p.Code, p.Stdout, p.Stderr)
	}
	if n := countLines(p.Stderr, "level=WARN"); n != 1 {
		t.Errorf("want exactly one warning, got %d:\n%s", n, p.Stderr)
	}
	moved, _ := filepath.Glob(filepath.Join(state, "garage.json.corrupt-*"))
	if len(moved) != 1 {
		t.Errorf("corrupt file not moved aside: %v", moved)
	}
}

func TestRunFailsOpenOnAReadOnlyStateDir(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	os.MkdirAll(state, 0o700)
	if os.Geteuid() == 0 {
		// root ignores permissions: make the dir really read-only.
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "ro,size=1m,mode=0700", "tmpfs", state).CombinedOutput(); err != nil {
			testenv.Skip(t, "cannot mount a read-only tmpfs as root here: %v %s", err, out)
		}
		t.Cleanup(func() { exec.Command("umount", state).Run() })
	} else {
		os.Chmod(state, 0o500)
		t.Cleanup(func() { os.Chmod(state, 0o700) })
	}
	for range 4 { // would trip if anything were recorded
		p := fb(t, state, testenv.RunArgs("nas", fastPolicy, "sh", "-c", "echo ran; exit 1")...)
		if p.Code != 1 || p.Stdout != "ran\n" {
			t.Fatalf("exit %d, stdout %q: the command must run\n%s", p.Code, p.Stdout, p.Stderr)
		}
		if n := countLines(p.Stderr, "state store unusable"); n != 1 {
			t.Fatalf("want exactly one store warning, got %d:\n%s", n, p.Stderr)
		}
	}
}

func TestRunInterruptForwardsTheSignalAndExits130(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	for _, tc := range []struct {
		sig  syscall.Signal
		want int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		got := filepath.Join(t.TempDir(), "got")
		script := fmt.Sprintf(`trap 'echo signalled > %s; exit 9' INT TERM; touch %s.started; while :; do sleep 0.01; done`, got, got)
		cmd := fbCmd(state, nil, testenv.RunArgs("interrupted", nil, "sh", "-c", script)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, "the child to start", func() bool { _, err := os.Stat(got + ".started"); return err == nil })
		cmd.Process.Signal(tc.sig)
		err := cmd.Wait()
		ee, _ := err.(*exec.ExitError)
		if ee == nil || ee.ExitCode() != tc.want {
			t.Fatalf("%v: exit %v, want %d", tc.sig, err, tc.want)
		}
		if _, err := os.Stat(got); err != nil {
			t.Errorf("%v was not forwarded to the child", tc.sig)
		}
	}
	// Nothing was recorded: status does not know the name.
	if p := inproc(t, state, "status", "--json", "interrupted"); p.Code != exitUsage || !strings.Contains(p.Stderr, "no circuit or chain named interrupted") {
		t.Errorf("an interrupted call left a record: exit %d %s%s", p.Code, p.Stdout, p.Stderr)
	}
}

func TestRunInterruptDuringBackoffExitsPromptly(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	cmd := fbCmd(state, nil, testenv.RunArgs("waiting", []string{"-v", "--backoff", "20s", "--jitter", "none"}, "sh", "-c", "exit 1")...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	go func() {
		r := bufio.NewReader(stderr)
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
	case <-waiting: // now in the 20s backoff
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("fusebox never logged its backoff")
	}
	begin := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	if ee, _ := err.(*exec.ExitError); ee == nil || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130", err)
	}
	if took := time.Since(begin); took > 10*time.Second {
		t.Errorf("took %v to exit from a 20s backoff sleep: it waited the backoff out", took)
	}
}

func TestRunSkipPrintsNothingUnlessVerbose(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	if p := inproc(t, state, "trip", "--new", "x"); p.Code != 0 {
		t.Fatalf("trip: exit %d: %s", p.Code, p.Stderr)
	}
	for _, flags := range [][]string{nil, {"-q"}} {
		// In-process and as a process alike.
		for _, p := range []testenv.Proc{inproc(t, state, testenv.RunArgs("x", flags, "true")...), fb(t, state, testenv.RunArgs("x", flags, "true")...)} {
			if p.Code != exitOpen || p.Stderr != "" {
				t.Errorf("run %v on a tripped circuit: exit %d, stderr %q; want 75 and nothing", flags, p.Code, p.Stderr)
			}
		}
	}
	if p := fb(t, state, testenv.RunArgs("x", []string{"-v"}, "true")...); p.Code != exitOpen || !strings.Contains(p.Stderr, "skipped") {
		t.Errorf("-v: exit %d, stderr %q; want 75 and the skip", p.Code, p.Stderr)
	}
}

func TestRunStoreTroublePrintsEvenWhenQuiet(t *testing.T) {
	state := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(state, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p := inproc(t, state, testenv.RunArgs("x", []string{"-q"}, "true")...)
	if p.Code != 0 || countLines(p.Stderr, "level=ERROR") != 1 || !strings.Contains(p.Stderr, "state store unusable") {
		t.Errorf("-q with an unusable store: exit %d, stderr %q; want 0 and the one error", p.Code, p.Stderr)
	}
}

func TestRunTakesFlagsBetweenNameAndTheCommand(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	p := inproc(t, state, "run", "flaky", "-v", "--attempts", "2", "--backoff", "1ms", "--", "false")
	if p.Code != 1 || countLines(p.Stderr, "attempt failed") != 2 {
		t.Errorf("run NAME -v --attempts 2 -- false: exit %d, want 1 after 2 attempts:\n%s", p.Code, p.Stderr)
	}
	if p := inproc(t, state, "run", "x", "echo", "--", "-v"); p.Code != 0 || p.Stdout != "-- -v\n" {
		t.Errorf("run x echo -- -v: exit %d, stdout %q; want the command as it came", p.Code, p.Stdout)
	}
	for _, args := range [][]string{{"run", "x", "--nope", "--", "true"}, {"run", "x", "--attempts", "2", "true", "--", "true"}} {
		if p := inproc(t, state, args...); p.Code != exitUsage {
			t.Errorf("%v: exit %d, want 64: %s", args, p.Code, p.Stderr)
		}
	}
	// As a process too.
	if p := inproc(t, state, "trip", "--new", "tripped"); p.Code != 0 {
		t.Fatal(p.Stderr)
	}
	if p := fb(t, state, "run", "tripped", "-v", "--attempts", "2", "--", "true"); p.Code != exitOpen || !strings.Contains(p.Stderr, "skipped") {
		t.Errorf("as a process: exit %d, stderr %q; want 75 and the skip (-v)", p.Code, p.Stderr)
	}
}

// The newcomer's slip, as they typed it: NAME forgotten before --. It is a
// usage error that names NAME, not a circuit called curl failing 127 on
// "command not found: -fsS"; nothing runs and no state is made.
func TestRunWithoutANameIsAUsageErrorNamingIt(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	marker := filepath.Join(t.TempDir(), "ran")
	for _, tc := range []struct {
		args    []string
		command string
	}{
		{[]string{"run", "--", "curl", "-fsS", "http://127.0.0.1:1/api/health"}, "curl"},
		{[]string{"run", "--attempts", "2", "--", "touch", marker}, "touch"},
	} {
		p := fb(t, state, tc.args...)
		if p.Code != exitUsage || !strings.Contains(p.Stderr, "run needs a circuit NAME before --: fusebox run NAME -- "+tc.command+" ...") {
			t.Errorf("%q: exit %d, stderr %q; want 64 and the line naming NAME", tc.args, p.Code, p.Stderr)
		}
		if strings.Contains(p.Stderr, "not found") || p.Stdout != "" {
			t.Errorf("%q: stdout %q, stderr %q: something ran", tc.args, p.Stdout, p.Stderr)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran")
	}
	if _, err := os.Stat(state); err == nil {
		t.Error("a usage error made the state dir")
	}
}

func TestRunFailureReasonQuotesTheCommandsLastStderrLine(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	p := inproc(t, state, testenv.RunArgs("zigbee", []string{"--attempts", "1"}, "sh", "-c", `echo "curl: (7) Failed to connect to zigbee.lan port 8080" >&2; exit 7`)...)
	want := "exit status 7: curl: (7) Failed to connect to zigbee.lan port 8080"
	if p.Code != 7 || !strings.HasPrefix(p.Stderr, "curl: (7)") || !strings.Contains(p.Stderr, `reason="not retryable after 1 attempt: `+want) && !strings.Contains(p.Stderr, want) {
		t.Errorf("exit %d, stderr %q; want 7, curl's line passed through and quoted in the failure line", p.Code, p.Stderr)
	}
	if st := statusOf(t, state, "zigbee"); st["last_failure"] != want {
		t.Errorf("status last_failure %q, want %q", st["last_failure"], want)
	}
}

func TestRunSkipExitChoosesTheStatusOfASkip(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("circuits:\n  backup:\n    skip_exit: 99\n  other: {}\n"), 0o600)
	env := []string{"FUSEBOX_CONFIG=" + cfg}
	for _, name := range []string{"backup", "other", "plain"} {
		if p := inprocEnv(t, state, env, "trip", "--new", name); p.Code != 0 {
			t.Fatal(p.Stderr)
		}
	}
	for _, tc := range []struct {
		name  string
		flags []string
		want  int
	}{
		{"backup", nil, 99},                         // the config's skip_exit
		{"backup", []string{"--skip-exit", "3"}, 3}, // the flag over the config
		{"other", nil, 75},
		{"plain", []string{"--skip-exit", "0"}, 0},
	} {
		args := testenv.RunArgs(tc.name, tc.flags, "true")
		// In-process and as a process alike.
		if p := inprocEnv(t, state, env, args...); p.Code != tc.want {
			t.Errorf("%v in-process: exit %d, want %d: %s", args, p.Code, tc.want, p.Stderr)
		}
		if p := fbEnv(t, state, env, args...); p.Code != tc.want {
			t.Errorf("%v as a process: exit %d, want %d: %s", args, p.Code, tc.want, p.Stderr)
		}
	}
	// A command's own 75 stays 75 and is a failure, not a skip.
	p := inprocEnv(t, state, env, testenv.RunArgs("fresh-one", []string{"--skip-exit", "99", "--attempts", "1"}, "sh", "-c", "exit 75")...)
	if p.Code != 75 || !strings.Contains(p.Stderr, "exit status 75") {
		t.Errorf("command exiting 75: exit %d, stderr %q", p.Code, p.Stderr)
	}
	if p := inproc(t, state, testenv.RunArgs("x", []string{"--skip-exit", "256"}, "true")...); p.Code != exitUsage {
		t.Errorf("--skip-exit 256: exit %d, want 64", p.Code)
	}
}
