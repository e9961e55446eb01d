package fusebox

import (
	"errors"
	"fmt"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/human"
)

// ErrLockTimeout is matched by the error of a Store that gave up waiting for
// a lock held by another caller after its own lock timeout, or on a write
// that other writers kept winning: the store works, it is only busy (see
// Store.Update, and Exclusive in answers).
var ErrLockTimeout = errors.New("timed out")

// ExhaustedError is returned by Do when the call failed: every attempt
// failed, a failure was not retryable, the deadline left no time for another
// attempt, or the circuit opened while the call waited to retry.
//
// A call that Reopened its circuit or was Overtaken failed within an outage
// told already, by the call that opened its circuit: a front end that prints
// each failed call where people see it can keep this one below.
type ExhaustedError struct {
	Name     string
	Attempts int        // attempts that ran
	stop     stopReason // why no further attempt was made, as Describe says it
	// RetryAfter is the server's requested wait, when it was past the
	// deadline.
	RetryAfter time.Duration
	// Reopened says the call was the probe of a half-open circuit and its
	// failure opened the circuit again: the outage goes on, and was told
	// when the circuit first opened.
	Reopened bool
	// Overtaken says another call's failure opened the circuit while this
	// one ran or waited to retry, and it was still open when this call
	// ended with a failure that counted: the outage was told by the call
	// that opened it.
	Overtaken bool
	// Budget is the retry budget's refusal, when it ended the call, saying
	// the circuit's retries and first attempts in its budget's window; nil
	// otherwise.
	Budget error
	// Err is the last attempt's error as Do logged it, which says what cut
	// it short and unwraps to what the attempt returned; or the deadline's.
	Err error
}

// stopReason says why Do made no further attempt.
type stopReason int

// The reasons to stop.
const (
	stopAttempts        stopReason = iota + 1 // every attempt the policy allows failed
	stopPermanent                             // the failure was not retryable
	stopDeadline                              // the call's deadline (the policy's or the caller's) was reached
	stopCallersDeadline                       // the caller's context deadline, earlier than the policy's, was reached
	stopTooClose                              // the deadline left no time for the next wait and attempt
	stopRetryAfter                            // the server asked to wait past the deadline
	stopOpened                                // the circuit opened while the call waited to retry
	stopBudget                                // the circuit's retry budget refused the retry (see Budget)
)

func (e *ExhaustedError) Error() string { return e.Name + ": " + e.Describe("") }

// Describe says why the call failed, without the circuit's name:
// "attempts exhausted after 3 attempts: timeout after 5s: status 503".
// callersDeadline, when not empty, names the caller's deadline wherever it
// ended the call or an attempt ("chain deadline of 15s").
func (e *ExhaustedError) Describe(callersDeadline string) string {
	why := ""
	switch e.stop {
	case stopAttempts:
		why = "attempts exhausted"
	case stopPermanent:
		why = "not retryable"
	case stopDeadline:
		why = "deadline reached"
	case stopCallersDeadline:
		why = "deadline reached"
		if callersDeadline != "" {
			why = callersDeadline + " reached"
		}
	case stopTooClose:
		why = "deadline too close to retry"
	case stopRetryAfter:
		why = fmt.Sprintf("server asked to wait %s, past the deadline", human.Round(e.RetryAfter))
	case stopOpened:
		why = "circuit opened"
	case stopBudget:
		why = "retry budget exhausted"
		if e.Budget != nil {
			why = e.Budget.Error()
		}
	default:
		why = "failed"
	}
	last := "no attempt"
	var ae *attemptError
	switch {
	case errors.As(e.Err, &ae) && ae.cut == cutCallersDeadline && e.stop == stopCallersDeadline:
		last = ae.Reason // the caller's deadline cut it: named once, in why
	case ae != nil:
		last = ae.describe(callersDeadline)
	case e.Err != nil:
		last = e.Err.Error()
	}
	return fmt.Sprintf("%s after %d attempt%s: %s", why, e.Attempts, plural(e.Attempts), last)
}

// Unwrap returns the last attempt's error.
func (e *ExhaustedError) Unwrap() error { return e.Err }

// attemptError is a failed attempt's error as Do logged it: the attempt's own
// reason, and whether a timeout or a deadline cut it short.
type attemptError struct {
	Attempt int
	Reason  string        // the Failure's Reason, else the error's text
	cut     attemptCut    // what cut it short, as Error says it
	Limit   time.Duration // the timeout or the policy's deadline that cut it, else 0
	Err     error         // what the attempt returned
}

// attemptCut says what ended an attempt before it finished by itself.
type attemptCut int

// The ways an attempt is cut short.
const (
	notCut             attemptCut = iota
	cutTimeout                    // the policy's attempt timeout
	cutDeadline                   // the policy's deadline for the whole call
	cutCallersDeadline            // the caller's context deadline
)

func (e *attemptError) Error() string { return e.describe("") }

func (e *attemptError) describe(callersDeadline string) string {
	switch e.cut {
	case cutTimeout:
		return fmt.Sprintf("timeout after %s: %s", e.Limit, e.Reason)
	case cutDeadline:
		return fmt.Sprintf("deadline of %s reached: %s", e.Limit, e.Reason)
	case cutCallersDeadline:
		if callersDeadline != "" {
			return callersDeadline + " reached: " + e.Reason
		}
		return "deadline reached: " + e.Reason
	}
	return e.Reason
}

// Unwrap returns what the attempt returned.
func (e *attemptError) Unwrap() error { return e.Err }

// Failure wraps an attempt's error to tell Do how to treat it. An error that is
// not a *Failure is a retryable failure that counts against the breaker.
type Failure struct {
	Err        error
	Reason     string        // replaces Err.Error() in logs and events; it must hold no secret
	Permanent  bool          // do not retry
	Neutral    bool          // counts neither for nor against the breaker (breaker.Outcome)
	Local      bool          // a failure of this machine's own network; neutral
	RetryAfter time.Duration // the server's requested wait, replacing the backoff
	OpenFor    time.Duration // opens the circuit at once for this long (breaker.Outcome)
	Cause      breaker.Cause // the failure's kind, stored with its event for a dashboard to group by
}

func (f *Failure) Error() string {
	switch {
	case f.Reason != "":
		return f.Reason
	case f.Err != nil:
		return f.Err.Error()
	}
	return "failed"

}

// Unwrap returns the wrapped error.
func (f *Failure) Unwrap() error { return f.Err }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
