package fusebox

import (
	"errors"
	"fmt"
	"time"
)

// ErrOpen is matched (errors.Is) by every error that means a call was not run
// because its circuit is open, forced open, or half-open with every probe
// slot taken.
var ErrOpen = errors.New("circuit open")

// errNeedLock tells the caller of Decide to decide again under the lock.
var errNeedLock = errors.New("decide under lock")

// OpenError is the ErrOpen of one circuit.
type OpenError struct {
	Name      string
	Phase     Phase
	ReopensIn time.Duration // 0 when forced open until reset
	Probing   bool          // half-open, and another caller holds the probe
}

func (e *OpenError) Error() string {
	switch {
	case e.Probing:
		return fmt.Sprintf("circuit %s is half-open and another caller is probing it", e.Name)
	case e.Phase == ForcedOpen && e.ReopensIn == 0:
		return fmt.Sprintf("circuit %s is forced open until reset", e.Name)
	case e.Phase == ForcedOpen:
		return fmt.Sprintf("circuit %s is forced open (closes in %s)", e.Name, roundDuration(e.ReopensIn))
	}
	return fmt.Sprintf("circuit %s is open (probe in %s)", e.Name, roundDuration(e.ReopensIn))
}

// Is makes errors.Is(err, ErrOpen) true.
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

// ExhaustedError is returned by Do when the call failed: every attempt
// failed, a failure was not retryable, the deadline left no time for another
// attempt, or the circuit opened while the call waited to retry.
type ExhaustedError struct {
	Name     string
	Attempts int    // attempts that ran
	Why      string // why no further attempt was made
	Err      error  // the last attempt's error
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("%s: %s after %d attempt%s: %v", e.Name, e.Why, e.Attempts, plural(e.Attempts), e.Err)
}

// Unwrap returns the last attempt's error.
func (e *ExhaustedError) Unwrap() error { return e.Err }

// Failure wraps an attempt's error to tell Do how to treat it. An error that is
// not a *Failure is a retryable failure that counts against the breaker.
type Failure struct {
	Err error
	// Reason replaces Err.Error() in logs and events (it must hold no secret).
	Reason    string
	Permanent bool // do not retry
	// Neutral failures do not count against the breaker (see Outcome).
	Neutral bool
	// Local marks a failure of this machine's own network; it is neutral.
	Local bool
	// RetryAfter is the server's requested wait, replacing the backoff.
	RetryAfter time.Duration
	// OpenFor opens the circuit at once for this long (see Outcome).
	OpenFor time.Duration
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

// Permanent marks err as not worth retrying. It still counts against the
// breaker. Permanent(nil) is nil, so `return Permanent(f())` keeps a success.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &Failure{Err: err, Permanent: true}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// roundDuration trims a duration to a precision a person reads at a glance.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
