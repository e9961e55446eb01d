package runner

import (
	"errors"
	"flag"
	"strconv"
	"strings"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
)

// Exit statuses an ExitError carries besides the command's own. They are an
// interface: scripts test them, so they never change (docs/run.md, "Exit status").
// A command killed by signal N gets 128+N, as the shell reports it.
const (
	ExitTimeout  = 124 // the last attempt hit its timeout, as timeout(1)
	ExitNotExec  = 126 // the command cannot be executed
	ExitNotFound = 127 // the command was not found
)

// CauseExit is the cause (breaker.Cause) of a failed attempt of the
// command: it exited with a status other than 0, or could not be started.
const CauseExit breaker.Cause = "exit"

// ExitError is a failed attempt of the command. When a call fails, Run's
// error wraps the last attempt's (errors.As finds it).
type ExitError struct {
	// Code is the exit status the caller of the call should get: the
	// command's own, 128+N when signal N killed it, or ExitTimeout,
	// ExitNotExec or ExitNotFound.
	Code int
	// Reason is how the attempt ended, for a log line: "exit status 3",
	// "killed by signal 9 (SIGKILL)", "command not found: curl".
	Reason string
}

func (e *ExitError) Error() string { return e.Reason }

// attemptFailure turns an attempt's result into what Do needs to know: nil
// for a success, else an *ExitError, wrapped in a *fusebox.Failure that
// says whether it may be retried and counts against the circuit.
func attemptFailure(res childResult, retryable *ExitCodes) error {
	if res.code == 0 && res.startErr == nil && !res.timedOut {
		return nil
	}
	ee := &ExitError{Code: res.code, Reason: res.reason}
	switch {
	case res.startErr != nil:
		// The command is missing or not executable: retrying cannot help and
		// the circuit's endpoint did nothing wrong.
		return &fusebox.Failure{Err: ee, Permanent: true, Neutral: true, Cause: CauseExit}
	case res.own != nil:
		// fusebox could not pass the output on (or wait for the command):
		// its own trouble, not the endpoint's, and a retry would meet it
		// again.
		return &fusebox.Failure{Err: ee, Permanent: true, Neutral: true, Cause: breaker.CauseOther}
	case res.timedOut:
		ee.Code = ExitTimeout
		return ee // Do names the cut: a timeout
	}
	return &fusebox.Failure{Err: ee, Permanent: !retryable.retryable(res.code), Cause: CauseExit}
}

var _ flag.Value = (*ExitCodes)(nil)

// ExitCodes is a list of exit statuses, set from text like "1,2,75" or ranges
// like "1-3" (the --retry-on-exit flag). *ExitCodes is a flag.Value, and a
// pflag.Value by its Type method. The zero value lists none.
type ExitCodes struct{ codes []int }

// String lists the codes, ranges spelt out: "1,2,3".
func (e *ExitCodes) String() string {
	s := make([]string, len(e.codes))
	for i, c := range e.codes {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// Set adds the codes v lists, each 1-255, to those already set.
func (e *ExitCodes) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 1 || a > 255 {
			return errors.New("want exit codes 1-255 like 1,2 or 1-3, got " + strconv.Quote(part))
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b > 255 {
				return errors.New("bad range " + strconv.Quote(part))
			}
		}
		for c := a; c <= b; c++ {
			e.codes = append(e.codes, c)
		}
	}
	return nil
}

// Type names the value in pflag's help.
func (e *ExitCodes) Type() string { return "codes" }

// retryable reports whether exit status code may be retried: any non-zero one
// when no list was given.
func (e *ExitCodes) retryable(code int) bool {
	if len(e.codes) == 0 {
		return true
	}
	for _, c := range e.codes {
		if c == code {
			return true
		}
	}
	return false
}
