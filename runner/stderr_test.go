package runner_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/mem"
	"github.com/fusebox-hq/fusebox/runner"
)

// newsHarness is a harness whose breaker runs on a clock the test moves, so
// that an open circuit turns half-open when the test says.
func newsHarness(t *testing.T, p fusebox.Policy) (*harness, *testenv.Clock) {
	clk := testenv.NewClock(fusebox.WallClock{}.Now())
	store := mem.New()
	return &harness{t: t, store: store, circuits: fusebox.New(store, fusebox.WithPolicy(p), fusebox.WithClock(clk))}, clk
}

// runStderr runs s under the circuit "cmd" of h and returns its stderr.
func (h *harness) runStderr(s runner.Spec) (stderr string, err error) {
	var buf bytes.Buffer
	s.Stderr = &buf
	_, err = h.run(s)
	return buf.String(), err
}

// tripFromElsewhere opens the circuit "cmd" as another process's failures
// would: TripAfter failed calls of a caller sharing h's store.
func (h *harness) tripFromElsewhere(p fusebox.Policy, clk fusebox.Clock) {
	h.t.Helper()
	other := fusebox.New(h.store, fusebox.WithClock(clk), fusebox.WithPolicy(fusebox.Policy{
		Retry: fusebox.RetryPolicy{Attempts: 1}, Breaker: p.Breaker,
	}))
	for range p.Breaker.TripAfter {
		other.Do(context.Background(), "cmd", func(context.Context) error { return errors.New("refused elsewhere") })
	}
	if st := h.state(); st.View(clk.Now()).Phase != breaker.Open {
		h.t.Fatalf("the circuit is %s after %d failures elsewhere", st.View(clk.Now()).Phase, p.Breaker.TripAfter)
	}
}

func TestStderrIsPrintedOnlyWhenTheRunsResultIsNews(t *testing.T) {
	closedPolicy := fastPolicy()
	closedPolicy.Breaker.TripAfter = 10
	for _, tc := range []struct {
		name   string
		policy fusebox.Policy
		script string // $n is the attempt
		want   string
	}{
		{"a first success prints its stderr", fastPolicy(), `echo warming up >&2`, "warming up\n"},
		{"a success after retries prints only its final attempt's", fastPolicy(), `echo attempt $n >&2; [ $n = 2 ]`, "attempt 2\n"},
		{"a failure while the circuit stays closed prints every attempt's", closedPolicy, `echo attempt $n >&2; exit 1`, "attempt 1\nattempt 2\nattempt 3\n"},
		{"a failure that opens the circuit prints every attempt's", fastPolicy(), `echo attempt $n >&2; exit 1`, "attempt 1\nattempt 2\nattempt 3\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newsHarness(t, tc.policy)
			got, _ := h.runStderr(runner.Spec{Argv: sh(t.TempDir(), tc.script)})
			if got != tc.want {
				t.Errorf("stderr %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAFailedProbePrintsNothingAndItsStderrLineIsInTheEventLog(t *testing.T) {
	p := fastPolicy()
	h, clk := newsHarness(t, p)
	h.tripFromElsewhere(p, clk)
	clk.Advance(p.Breaker.OpenFor) // half-open: the next run probes
	got, err := h.runStderr(runner.Spec{Argv: []string{"sh", "-c", "echo still down >&2; exit 7"}})
	var ee *fusebox.ExhaustedError
	if !errors.As(err, &ee) || !ee.Reopened {
		t.Fatalf("Run = %v, want a failed probe", err)
	}
	if got != "" {
		t.Errorf("a failed probe printed %q on stderr, want nothing: the outage was told", got)
	}
	if code := exitError(t, err).Code; code != 7 {
		t.Errorf("exit status %d, want the command's 7", code)
	}
	if st := h.state(); !strings.HasSuffix(st.LastFailure, "exit status 7: still down") {
		t.Errorf("last failure %q, want it to end with the command's stderr line", st.LastFailure)
	}
}

func TestARunAnotherProcesssFailureOvertookPrintsNothing(t *testing.T) {
	p := fastPolicy()
	p.Retry.Attempts = 1
	h, clk := newsHarness(t, p)
	// The command has started (the circuit let it run) once it opens the
	// fifo; it fails once the test, having opened the circuit from
	// elsewhere meanwhile, writes to it.
	fifo := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	type result struct {
		stderr string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		var buf bytes.Buffer
		err := runner.Run(context.Background(), h.circuits, "cmd", runner.Spec{
			Argv: []string{"sh", "-c", `echo connection refused >&2; read line < "$0"; exit 1`, fifo}, Stderr: &buf,
		})
		done <- result{buf.String(), err}
	}()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // blocks until the command reads
	if err != nil {
		t.Fatal(err)
	}
	h.tripFromElsewhere(p, clk)
	w.WriteString("fail now\n")
	w.Close()
	r := <-done
	var ee *fusebox.ExhaustedError
	if !errors.As(r.err, &ee) || !ee.Overtaken {
		t.Fatalf("Run = %v, want a failure that another's failures overtook", r.err)
	}
	if r.stderr != "" {
		t.Errorf("an overtaken run printed %q on stderr, want nothing", r.stderr)
	}
}

func TestStreamAndStderrLivePassStderrThroughAsItComes(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec runner.Spec
	}{
		{"--stream", runner.Spec{Stream: true}},
		{"a terminal", runner.Spec{StderrLive: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fastPolicy())
			// The command waits for the test to have read its stderr line:
			// held, it would never arrive.
			fifo := filepath.Join(t.TempDir(), "go")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			s := tc.spec
			s.Argv = []string{"sh", "-c", `echo asking >&2; read line < "$0"`, fifo}
			stderr := newLines()
			s.Stderr = stderr
			done := make(chan error, 1)
			go func() { done <- runner.Run(context.Background(), h.circuits, "cmd", s) }()
			stderr.next(t, "asking")
			if err := os.WriteFile(fifo, []byte("answer\n"), 0); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("Run: %v", err)
			}
		})
	}
}

func TestStderrPastItsBoundKeepsHeadAndTailAndSaysHowMuchWasCut(t *testing.T) {
	h := newHarness(t, fastPolicy())
	// 3 MiB of numbered lines, then a last line: more than is held.
	got, err := h.runStderr(runner.Spec{Argv: []string{"sh", "-c", `seq 1 400000 >&2; echo the last line >&2`}, SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !strings.HasPrefix(got, "1\n2\n3\n") || !strings.HasSuffix(got, "400000\nthe last line\n") {
		t.Errorf("stderr starts %q and ends %q: want the head and the tail kept", head(got), tail(got))
	}
	if !strings.Contains(got, " bytes of the command's stderr cut here") || len(got) > 2<<20 {
		t.Errorf("stderr is %d bytes and says no cut: want it bounded, with a line saying how much was cut", len(got))
	}
}

func head(s string) string { return s[:min(len(s), 40)] }
func tail(s string) string { return s[max(0, len(s)-40):] }
