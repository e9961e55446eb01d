// Package command runs a command under a circuit breaker, with retries: what
// "fusebox run" does, for any program that wants it in-process.
//
// Each attempt is a fresh child process in its own process group, executed
// directly, never through a shell; when an attempt's time is up the whole
// group is stopped, so no grandchild outlives it. Only the stdout of the
// attempt that ends the call is passed on, so a retried command never prints
// twice. How the command ended becomes the exit status a shell script tests:
// see ExitError and the Exit constants.
package command

import (
	"context"
	"errors"
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
	// Stderr gets every attempt's stderr as it comes. nil discards it. The
	// last line an attempt wrote there ends its failure's reason:
	// "exit status 7: curl: (7) Failed to connect to zigbee.lan port 8080".
	Stderr io.Writer
	// Stream passes every attempt's stdout through as it comes, instead of
	// holding it until the call knows which attempt ends it.
	Stream bool
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
}

// Run runs s.Argv under the named circuit of c, an attempt at a time, as
// c.Do allows: each attempt gets the circuit's attempt timeout (then SIGTERM
// to its process group, and SIGKILL a second later), and failed attempts are
// retried with backoff within the call's deadline. A command that cannot be
// executed or is not found is not retried and does not count against the
// circuit, and neither does an attempt whose output fusebox could not pass
// on. Run may be called concurrently.
//
// Run returns nil when an attempt succeeded; an error matching fusebox.ErrOpen
// when the circuit was open and nothing ran; an *Interrupted when s.Interrupt
// reported a signal; else c.Do's error, which wraps the last attempt's
// *ExitError when the command ran and failed.
func Run(ctx context.Context, c *fusebox.Circuits, name string, s Spec) error {
	if len(s.Argv) == 0 {
		return errors.New("command: Spec.Argv is empty: nothing to run")
	}
	interrupt := s.Interrupt
	if interrupt == nil {
		interrupt = func() (syscall.Signal, bool) { return 0, false }
	}
	var trouble sync.Once
	report := func(err error) {
		if s.Trouble != nil {
			trouble.Do(func() { s.Trouble(err) })
		}
	}
	var last *spool
	defer func() {
		if last != nil {
			last.Close()
		}
	}()
	attempt := 0
	err := c.Do(ctx, name, func(actx context.Context) error {
		attempt++
		if last != nil {
			last.Close() // a failed attempt's stdout is discarded
			last = nil
		}
		ch := &child{argv: s.Argv, stderr: s.Stderr, interrupt: interrupt, redact: s.Redact}
		if attempt == 1 {
			ch.stdin = s.Stdin
		}
		if s.Stream || s.Stdout == nil {
			ch.stdout = s.Stdout
		} else {
			last = &spool{dir: s.SpoolDir, mem: stdoutMemory, live: s.Stdout, trouble: report}
			ch.stdout = last
		}
		return attemptFailure(ch.run(actx), &s.RetryOnExit)
	})
	if last != nil {
		if _, werr := last.WriteTo(s.Stdout); errors.Is(werr, syscall.EPIPE) {
			return &Interrupted{Signal: syscall.SIGPIPE} // nobody reads stdout any more, as a shell reports it
		} else if werr != nil && err == nil {
			err = werr
		}
	}
	if sig, ok := interrupt(); ok {
		return &Interrupted{Signal: sig}
	}
	return err
}
