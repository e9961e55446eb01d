package runner_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fusebox-hq/fusebox/internal/testenv"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/mem"
	"github.com/fusebox-hq/fusebox/runner"
)

// TestMain fails the run if any test leaves a goroutine behind: Run must not
// leak the goroutines that wait for and copy from a child, whatever way an
// attempt ends.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testenv.Exit)) }

// fastPolicy retries within milliseconds, so tests never wait for long.
func fastPolicy() fusebox.Policy {
	return fusebox.Policy{
		Retry: fusebox.RetryPolicy{
			Attempts: 3,
			Backoff:  fusebox.Backoff{First: time.Millisecond, Max: 5 * time.Millisecond, Jitter: fusebox.JitterNone},
			Timeout:  time.Minute,
			Deadline: 5 * time.Minute,
		},
		Breaker: breaker.Policy{TripAfter: 3, OpenFor: time.Hour},
	}
}

// harness is Circuits over an in-memory store.
type harness struct {
	t        *testing.T
	store    *mem.Store
	circuits *fusebox.Circuits
}

func newHarness(t *testing.T, p fusebox.Policy) *harness {
	store := mem.New()
	return &harness{t: t, store: store, circuits: fusebox.New(store, fusebox.WithPolicy(p))}
}

// run runs s under the circuit "cmd" and returns what it printed on stdout
// (s.Stdout, when set, is replaced).
func (h *harness) run(s runner.Spec) (stdout string, err error) {
	h.t.Helper()
	var out bytes.Buffer
	s.Stdout = &out
	err = runner.Run(context.Background(), h.circuits, "cmd", s)
	return out.String(), err
}

func (h *harness) state() breaker.State {
	h.t.Helper()
	st, err := h.store.Load(context.Background(), "cmd")
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

func (h *harness) counts() fusebox.Counts {
	h.t.Helper()
	c, err := h.store.Counts(context.Background(), "cmd")
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}

// sh is the argv of a shell script that knows which attempt it is: $n is 1
// on the first, 2 on the second, counted in a file under dir.
func sh(dir, script string) []string {
	count := filepath.Join(dir, "attempts")
	prelude := fmt.Sprintf(`n=$(($(cat %[1]s 2>/dev/null || echo 0) + 1)); echo $n > %[1]s; `, count)
	return []string{"sh", "-c", prelude + script}
}

// exitError returns the *runner.ExitError err wraps, failing the test when
// there is none.
func exitError(t *testing.T, err error) *runner.ExitError {
	t.Helper()
	var ee *runner.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("error %v (%T) wraps no *runner.ExitError", err, err)
	}
	return ee
}

// attempts returns how many attempts the failed call err ended made.
func attempts(t *testing.T, err error) int {
	t.Helper()
	var ex *fusebox.ExhaustedError
	if !errors.As(err, &ex) {
		t.Fatalf("error %v (%T) is no *fusebox.ExhaustedError", err, err)
	}
	return ex.Attempts
}

// lines is a Stdout that hands each line a command prints to the test, so
// that the test can wait for what the command says it did.
type lines struct {
	mu      sync.Mutex
	partial []byte
	ch      chan string
}

func newLines() *lines { return &lines{ch: make(chan string, 100)} }

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.ch <- string(l.partial[:i])
		l.partial = l.partial[i+1:]
	}
}

// next returns the next line, which must start with prefix. The bound only
// keeps a broken test from hanging; nothing here measures speed.
func (l *lines) next(t *testing.T, prefix string) string {
	t.Helper()
	select {
	case s := <-l.ch:
		if !strings.HasPrefix(s, prefix) {
			t.Fatalf("the command printed %q, want a line starting %q", s, prefix)
		}
		return s
	case <-time.After(time.Minute):
		t.Fatalf("the command printed no line %q within a minute", prefix)
	}
	return ""
}
