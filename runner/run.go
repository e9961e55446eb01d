// Package runner runs a command under a circuit breaker, with retries: what
// "fusebox run" does, for any program that wants it in-process.
//
// Each attempt is a fresh child process in its own process group, executed
// directly, never through a shell; when an attempt's time is up the whole
// group is stopped, so no grandchild outlives it. Only the stdout of the
// attempt that ends the call is passed on, so a retried command never prints
// twice. How the command ended becomes the exit status a shell script tests:
// see ExitError and the Exit constants.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"

	"github.com/fusebox-hq/fusebox"
)

// Spec is the command Run runs and where its streams go.
type Spec struct {
	// Argv is the command and its arguments. Argv[0] is looked up in $PATH
	// unless it holds a slash.
	Argv []string
	// Stdin is given to the first attempt only; a retry reads nothing, since
	// the first attempt may have consumed it. nil reads nothing.
	Stdin io.Reader
	// Stdout gets the stdout of the attempt that ended the call, once it has
	// ended, or with Stream every attempt's as it comes. nil discards it.
	Stdout io.Writer
	// Stderr gets the command's stderr once the call has ended, when its
	// result is news: a success prints its final attempt's stderr; a failure
	// prints every attempt's, unless it was told already (a failed probe, or
	// a call another call's failure overtook: fusebox.ExhaustedError's
	// Reopened or Overtaken), which prints none. Each attempt's is held up to a bound: past it the
	// first and last parts are kept and a line says how much was cut. With
	// Stream or StderrLive every attempt's passes through as it comes. nil
	// discards it. The last line an attempt wrote there ends its failure's
	// reason, printed or not:
	// "exit status 7: curl: (7) Failed to connect to zigbee.lan port 8080".
	Stderr io.Writer
	// Stream passes every attempt's stdout and stderr through as they come,
	// instead of holding them until the call knows which to print.
	Stream bool
	// StderrLive passes every attempt's stderr through as it comes, and
	// holds only stdout (a terminal: a person is watching).
	StderrLive bool
	// SpoolDir is where output held past its share of memory is spooled:
	// unlinked temp files. "": os.TempDir().
	SpoolDir string
	// Trouble, when set, hears fusebox's own trouble that the call went on
	// through: output that could not be held (a full or unwritable SpoolDir)
	// and passed through as it came instead. It is called at most once per
	// call, from any goroutine.
	Trouble func(error)
	// RetryOnExit lists the exit statuses worth retrying; a failure with
	// another status ends the call, and still counts against the circuit. A
	// timeout is always worth retrying. The zero value retries any failure.
	RetryOnExit ExitCodes
	// Redact hides secrets in the last line of the command's stderr, which
	// a failure's reason quotes (in the log, the event log and status).
	// nil: the line is quoted as it is.
	Redact func(string) string
	// Interrupt, when it reports a signal after ctx ended, is what stops the
	// attempt running (the group gets that signal, not SIGTERM), and Run
	// returns an *Interrupted. nil: only ctx ends a call. See NotifyInterrupt.
	Interrupt Interrupt
	// EndDescendants makes this process the reaper of the command's
	// orphaned descendants (Linux's PR_SET_CHILD_SUBREAPER) and ends each
	// still running when an attempt ends, with SIGKILL: a job left in the
	// background, a setsid grandchild that a timeout's group signal
	// missed. Set it only in a process whose children are the command's
	// alone (fusebox run): every child it has then is taken for one. A
	// descendant that cannot be ended (a set-uid program's, signalled by
	// an unprivileged fusebox) is told to Warn. Elsewhere it does nothing.
	EndDescendants bool
	// Warn, when set, hears what fusebox could not do around the command
	// that is no failure of it (EndDescendants'). It is called from the
	// goroutine of Run.
	Warn func(error)
}

// Run runs s.Argv under the named circuit of c, an attempt at a time, as
// c.Do allows: each attempt gets the circuit's attempt timeout (then SIGTERM
// to its process group, and SIGKILL a second later), and failed attempts are
// retried with backoff within the call's deadline. A command that cannot be
// executed or is not found is not retried and does not count against the
// circuit, and neither does an attempt whose output fusebox could not pass
// on. Run may be called concurrently.
//
// Run returns nil when an attempt succeeded; an error matching breaker.ErrOpen
// when the circuit was open and nothing ran; an *Interrupted when s.Interrupt
// reported a signal; else c.Do's error, which wraps the last attempt's
// *ExitError when the command ran and failed.
func Run(ctx context.Context, c *fusebox.Circuits, name string, s Spec) error {
	if len(s.Argv) == 0 {
		return errors.New("runner.Run: Spec.Argv is empty: nothing to run")
	}
	interrupt := s.Interrupt
	if interrupt == nil {
		interrupt = func() (syscall.Signal, bool) { return 0, false }
	}
	h := &held{spec: &s}
	defer h.close()
	attempt := 0
	err := c.Do(ctx, name, func(actx context.Context) error {
		attempt++
		ch := &child{argv: s.Argv, interrupt: interrupt, redact: s.Redact}
		if s.EndDescendants {
			ch.orphans = s.warn
		}
		if attempt == 1 {
			ch.stdin = s.Stdin
			// Here, not before Do: a run its open circuit skips starts
			// nothing, and pays nothing for its descendants.
			if s.EndDescendants {
				if err := becomeSubreaper(); err != nil {
					s.warn(fmt.Errorf("cannot become the reaper of the command's descendants: %w", err))
				}
			}
		}
		ch.stdout, ch.stderr = h.attempt()
		return attemptFailure(ch.run(actx), &s.RetryOnExit)
	})
	if werr := h.print(err); errors.Is(werr, syscall.EPIPE) {
		return &Interrupted{Signal: syscall.SIGPIPE} // nobody reads the output any more, as a shell reports it
	} else if werr != nil && err == nil {
		err = werr // the command's stdout is lost
	}
	if sig, ok := interrupt(); ok {
		return &Interrupted{Signal: sig}
	}
	return err
}

// held is a call's output while it runs: the stdout of its latest attempt
// and the stderr of each, unless they pass through as they come.
type held struct {
	spec    *Spec
	stdout  *spool   // the latest attempt's; nil when it passes through
	stderr  []*spool // every attempt's, in order; nil when it passes through
	trouble sync.Once
}

// attempt returns where the next attempt's stdout and stderr go. A failed
// attempt's stdout is discarded here; its stderr is kept until the call
// knows whether it is news.
func (h *held) attempt() (stdout, stderr io.Writer) {
	s := h.spec
	if h.stdout != nil {
		h.stdout.Close()
		h.stdout = nil
	}
	stdout, stderr = s.Stdout, s.Stderr
	if !s.Stream && s.Stdout != nil {
		h.stdout = &spool{dir: s.SpoolDir, mem: stdoutMemory, live: s.Stdout, trouble: h.report}
		stdout = h.stdout
	}
	if !s.Stream && !s.StderrLive && s.Stderr != nil {
		sp := &spool{dir: s.SpoolDir, mem: stderrMemory, head: stderrHead, tail: stderrTail, what: "stderr", live: s.Stderr, trouble: h.report}
		h.stderr = append(h.stderr, sp)
		stderr = sp
	}
	return stdout, stderr
}

func (s *Spec) warn(err error) {
	if s.Warn != nil {
		s.Warn(err)
	}
}

func (h *held) report(err error) {
	if h.spec.Trouble != nil {
		h.trouble.Do(func() { h.spec.Trouble(err) })
	}
}

// print writes what the call's result, err, prints: the stderr that is
// news (see Spec.Stderr), then the last attempt's stdout. Its error is
// stdout's, or EPIPE from either (nobody reads them any more); stderr's
// other errors leave the call's result as it is.
func (h *held) print(err error) error {
	stderr := h.stderr
	var ee *fusebox.ExhaustedError
	switch {
	case err == nil && len(stderr) > 0:
		stderr = stderr[len(stderr)-1:] // a success's retries are no news
	case errors.As(err, &ee) && (ee.Reopened || ee.Overtaken):
		stderr = nil
	}
	var first error
	for _, sp := range stderr {
		if _, werr := sp.WriteTo(h.spec.Stderr); errors.Is(werr, syscall.EPIPE) {
			first = werr
		}
	}
	if h.stdout != nil {
		if _, werr := h.stdout.WriteTo(h.spec.Stdout); werr != nil && (first == nil || errors.Is(werr, syscall.EPIPE)) {
			first = werr
		}
	}
	return first
}

func (h *held) close() {
	if h.stdout != nil {
		h.stdout.Close()
	}
	for _, sp := range h.stderr {
		sp.Close()
	}
}
