package runner_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/runner"
)

func TestOnlyTheAttemptThatEndsTheCallPrints(t *testing.T) {
	for _, tc := range []struct {
		name     string
		script   string
		stream   bool
		want     string
		wantCode int // 0: the call succeeds
	}{
		{"a first success prints its stdout once", `echo hello`, false, "hello\n", 0},
		{"a retried attempt's stdout is discarded", `echo attempt $n; [ $n = 2 ]`, false, "attempt 2\n", 0},
		{"when every attempt fails the last one's stdout is printed", `echo attempt $n; exit 3`, false, "attempt 3\n", 3},
		{"stream passes every attempt's stdout through", `echo attempt $n; [ $n = 2 ]`, true, "attempt 1\nattempt 2\n", 0},
		{"stream passes every failed attempt's stdout through", `echo attempt $n; exit 3`, true, "attempt 1\nattempt 2\nattempt 3\n", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fastPolicy())
			out, err := h.run(runner.Spec{Argv: sh(t.TempDir(), tc.script), Stream: tc.stream})
			if tc.wantCode == 0 && err != nil {
				t.Fatalf("Run: %v", err)
			}
			if tc.wantCode != 0 {
				if ee := exitError(t, err); ee.Code != tc.wantCode {
					t.Errorf("exit status %d, want %d", ee.Code, tc.wantCode)
				}
			}
			if out != tc.want {
				t.Errorf("stdout = %q, want %q", out, tc.want)
			}
		})
	}
}

func TestStdoutPastTheMemoryLimitArrivesIntact(t *testing.T) {
	// Over 4 MiB, so the spool spills to its temp file.
	const n = 700000
	var want strings.Builder
	for i := 1; i <= n; i++ {
		want.WriteString(strconv.Itoa(i) + "\n")
	}
	h := newHarness(t, fastPolicy())
	out, err := h.run(runner.Spec{Argv: []string{"seq", "1", strconv.Itoa(n)}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if out != want.String() {
		t.Errorf("stdout: %d bytes, want the %d bytes seq printed", len(out), want.Len())
	}
}

func TestOnlyTheFirstAttemptGetsStdin(t *testing.T) {
	// A file, as a script's stdin often is: each attempt reads one line of it,
	// so a retry given stdin would read the next line.
	in := filepath.Join(t.TempDir(), "stdin")
	if err := os.WriteFile(in, []byte("one\ntwo\nthree\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := newHarness(t, fastPolicy())
	out, err := h.run(runner.Spec{
		Argv:   sh(t.TempDir(), `read line; echo "attempt $n read [$line]"; exit 1`),
		Stdin:  f,
		Stream: true,
	})
	if want := "attempt 1 read [one]\nattempt 2 read []\nattempt 3 read []\n"; out != want {
		t.Errorf("stdout = %q, want %q (err %v)", out, want, err)
	}
}

func TestTheExitStatusIsTheCommands(t *testing.T) {
	for _, tc := range []struct {
		name       string
		argv       []string
		wantCode   int
		wantReason string
	}{
		{"its own exit status", []string{"sh", "-c", "exit 3"}, 3, "exit status 3"},
		{"128+N when signal N killed it", []string{"sh", "-c", "kill -9 $$"}, 137, "killed by signal 9 (SIGKILL)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := fastPolicy()
			p.Retry.Attempts = 1
			_, err := newHarness(t, p).run(runner.Spec{Argv: tc.argv})
			if ee := exitError(t, err); ee.Code != tc.wantCode || ee.Reason != tc.wantReason {
				t.Errorf("got %d %q, want %d %q", ee.Code, ee.Reason, tc.wantCode, tc.wantReason)
			}
		})
	}
}

func TestACommandThatCannotRunIsNotRetriedAndDoesNotTrip(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "script.sh")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		argv0      string
		wantCode   int
		wantReason string
	}{
		{"not found exits 127", "no-such-command-fusebox", runner.ExitNotFound, "command not found: no-such-command-fusebox"},
		{"not executable exits 126", notExec, runner.ExitNotExec, "permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fastPolicy())
			for range fastPolicy().Breaker.TripAfter + 1 {
				_, err := h.run(runner.Spec{Argv: []string{tc.argv0, "arg"}})
				ee := exitError(t, err)
				if ee.Code != tc.wantCode || !strings.Contains(ee.Reason, tc.wantReason) {
					t.Fatalf("got %d %q, want %d and a reason with %q", ee.Code, ee.Reason, tc.wantCode, tc.wantReason)
				}
				if n := attempts(t, err); n != 1 {
					t.Errorf("%d attempts, want 1: retrying cannot help", n)
				}
			}
			if st := h.state(); st.Phase != breaker.Closed || st.ConsecutiveFailures != 0 {
				t.Errorf("circuit %s with %d consecutive failures, want closed with none", st.Phase, st.ConsecutiveFailures)
			}
		})
	}
}

func TestRetryOnExitLimitsRetries(t *testing.T) {
	for _, tc := range []struct {
		name         string
		retryOn      string // "": no list
		exit         int
		wantAttempts int
	}{
		{"no list retries any failure", "", 2, 3},
		{"a listed status is retried", "1,75", 75, 3},
		{"a status in a listed range is retried", "1-3", 2, 3},
		{"an unlisted status ends the call", "75", 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var codes runner.ExitCodes
			if tc.retryOn != "" {
				if err := codes.Set(tc.retryOn); err != nil {
					t.Fatal(err)
				}
			}
			h := newHarness(t, fastPolicy())
			_, err := h.run(runner.Spec{Argv: []string{"sh", "-c", "exit " + strconv.Itoa(tc.exit)}, RetryOnExit: codes})
			if ee := exitError(t, err); ee.Code != tc.exit {
				t.Errorf("exit status %d, want %d", ee.Code, tc.exit)
			}
			if n := attempts(t, err); n != tc.wantAttempts {
				t.Errorf("%d attempts, want %d", n, tc.wantAttempts)
			}
			if n := h.counts().Failures; n != uint64(tc.wantAttempts) {
				t.Errorf("%d failures counted, want %d: one that is not retried still counts", n, tc.wantAttempts)
			}
		})
	}
}

func TestAnOpenCircuitRunsNothing(t *testing.T) {
	h := newHarness(t, fastPolicy())
	_, err := h.store.Update(context.Background(), "cmd", func(st *breaker.State) ([]breaker.Event, bool) {
		return st.Trip(fusebox.WallClock{}.Now(), time.Hour, ""), true
	})
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	if _, err := h.run(runner.Spec{Argv: []string{"touch", marker}}); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("Run on an open circuit: %v, want breaker.ErrOpen", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran although the circuit is open")
	}
}

func TestAnInterruptIsForwardedToTheCommandAndIsTheResult(t *testing.T) {
	h := newHarness(t, fastPolicy())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var interrupted atomic.Bool
	out := newLines()
	// The shell's background sleep ignores SIGINT, as a non-interactive
	// shell's jobs do: it must not outlive the call either.
	script := `trap 'echo got INT; exit 9' INT; sleep 300 & echo ready $!; wait`
	done := make(chan error, 1)
	go func() {
		done <- runner.Run(ctx, h.circuits, "cmd", runner.Spec{
			Argv: []string{"sh", "-c", script}, Stdout: out, Stream: true,
			Interrupt: func() (syscall.Signal, bool) { return syscall.SIGINT, interrupted.Load() },
		})
	}()
	job := pidfd(t, field(t, out.next(t, "ready ")))
	interrupted.Store(true)
	cancel()
	err := <-done
	var ie *runner.Interrupted
	if !errors.As(err, &ie) || ie.Signal != syscall.SIGINT {
		t.Fatalf("Run: %v, want *runner.Interrupted by SIGINT", err)
	}
	out.next(t, "got INT")
	job()
	if n := h.counts().Failures; n != 0 {
		t.Errorf("an interrupted call counted %d failures, want none", n)
	}
}

func TestNotifyInterruptCancelsAndRemembersTheSignal(t *testing.T) {
	ctx, sig, stop := runner.NotifyInterrupt(context.Background())
	defer stop()
	if s, ok := sig(); ok {
		t.Fatalf("signal %v reported before any came", s)
	}
	// Caught by NotifyInterrupt, so the test process lives on.
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	if s, ok := sig(); !ok || s != syscall.SIGTERM {
		t.Errorf("sig() = %v, %v; want SIGTERM", s, ok)
	}
}

func TestLazyInterruptWatchesFromArmOn(t *testing.T) {
	ctx, sig, arm, stop := runner.LazyInterrupt(context.Background())
	defer stop()
	if ctx.Err() != nil {
		t.Fatal("the context ended before any signal")
	}
	arm()
	arm() // again, as a call with several requests does: still one watcher
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	if s, ok := sig(); !ok || s != syscall.SIGHUP {
		t.Errorf("sig() = %v, %v; want SIGHUP", s, ok)
	}
}

func TestLazyInterruptNeverArmedStopsCleanly(t *testing.T) {
	ctx, sig, arm, stop := runner.LazyInterrupt(context.Background())
	stop()
	stop() // twice: no panic
	arm()  // after stop: nothing is installed, nothing runs
	if ctx.Err() == nil {
		t.Error("stop did not cancel the context")
	}
	if s, ok := sig(); ok {
		t.Errorf("sig() = %v with no signal sent", s)
	}
}

func TestEmptyArgvIsAnError(t *testing.T) {
	if _, err := newHarness(t, fastPolicy()).run(runner.Spec{}); err == nil {
		t.Error("Run with no Argv: nil error")
	}
}
