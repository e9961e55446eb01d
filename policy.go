package fusebox

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// Jitter names how a backoff delay is randomised, as defined in the AWS
// Architecture Blog's "Exponential Backoff And Jitter".
type Jitter string

// The jitter kinds. The zero value means JitterFull.
const (
	JitterFull         Jitter = "full"         // uniform in [0, exp)
	JitterEqual        Jitter = "equal"        // exp/2 + uniform in [0, exp/2)
	JitterDecorrelated Jitter = "decorrelated" // uniform in [first, 3*previous), capped
	JitterNone         Jitter = "none"         // exactly exp
)

// The defaults WithDefaults gives a RetryPolicy's zero fields
// (Policy{}.WithDefaults() shows them).
const (
	defaultAttempts   = 3
	defaultBackoff    = 2 * time.Second
	defaultMultiplier = 2.0
	defaultMaxDelay   = 30 * time.Second
	defaultTimeout    = 10 * time.Second
	defaultDeadline   = 60 * time.Second
)

// The defaults WithDefaults gives a breaker.Policy's zero fields.
const (
	defaultTripAfter      = 3
	defaultOpenFor        = 30 * time.Second
	defaultOpenMultiplier = 2.0
	defaultOpenMax        = 5 * time.Minute
	defaultProbes         = 1
	// probeLeaseSlack is added to the attempt timeout to make the default
	// probe lease: a probe is killed at its timeout (plus a grace), so its
	// lease outlives it, and a probe killed with SIGKILL frees the circuit
	// once its lease ends.
	probeLeaseSlack = 2 * time.Second
)

// Backoff is the schedule of waits between attempts. The zero value means the
// defaults: 2s, doubling, capped at 30s, full jitter.
type Backoff struct {
	First      time.Duration // the first wait before jitter (config: backoff)
	Multiplier float64       // growth per attempt (config: multiplier)
	Max        time.Duration // cap on any single wait (config: max_delay)
	Jitter     Jitter        // config: jitter
}

// RetryPolicy says how often and for how long a call is attempted.
type RetryPolicy struct {
	Attempts int           // attempts in all, including the first
	Backoff  Backoff       // waits between attempts
	Timeout  time.Duration // per attempt; NoDeadline: none
	Deadline time.Duration // for the whole call, waits included, capping every wait; NoDeadline: none
	// Budget caps the circuit's retries across every process sharing its
	// store (config: retry_budget); nil: no cap, and no budget I/O.
	Budget *RetryBudget
}

// Policy is the retry and breaker policy of one circuit. The zero value is
// usable: every zero field means its default (see WithDefaults).
type Policy struct {
	Retry   RetryPolicy
	Breaker breaker.Policy
}

// WithDefaults returns p with every zero field set to its default, the
// breaker's included (see breaker.Policy); the default probe lease is the
// attempt timeout and 2s. Policy{}.WithDefaults() is the policy used when
// nothing is configured.
func (p Policy) WithDefaults() Policy {
	r := &p.Retry
	r.Attempts = cmp.Or(r.Attempts, defaultAttempts)
	r.Backoff.First = cmp.Or(r.Backoff.First, defaultBackoff)
	r.Backoff.Multiplier = cmp.Or(r.Backoff.Multiplier, defaultMultiplier)
	r.Backoff.Max = cmp.Or(r.Backoff.Max, max(defaultMaxDelay, r.Backoff.First))
	r.Backoff.Jitter = cmp.Or(r.Backoff.Jitter, JitterFull)
	r.Timeout = cmp.Or(r.Timeout, defaultTimeout)
	r.Deadline = cmp.Or(r.Deadline, defaultDeadline)
	if r.Budget != nil {
		b := *r.Budget // a copy: p's caller may share the pointer
		b.Min = cmp.Or(b.Min, defaultBudgetMin)
		b.Window = cmp.Or(b.Window, defaultBudgetWindow)
		r.Budget = &b
	}
	b := &p.Breaker
	b.TripAfter = cmp.Or(b.TripAfter, defaultTripAfter)
	b.OpenFor = cmp.Or(b.OpenFor, defaultOpenFor)
	b.OpenMultiplier = cmp.Or(b.OpenMultiplier, defaultOpenMultiplier)
	b.OpenMax = cmp.Or(b.OpenMax, max(defaultOpenMax, b.OpenFor))
	b.Probes = cmp.Or(b.Probes, defaultProbes)
	b.ProbeLease = cmp.Or(b.ProbeLease, r.Timeout+probeLeaseSlack)
	return p
}

// FieldError is one impossible value in a Policy. Field is the config key
// (for example "open_max"), so a config loader can point at the line.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Validate reports every impossible value in p, joined; each is a *FieldError.
// Zero values are valid: they mean the default.
func (p Policy) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	r, b := p.Retry, p.Breaker
	if r.Attempts < 0 {
		bad("attempts", "must be at least 1, got %d", r.Attempts)
	}
	if r.Backoff.First < 0 {
		bad("backoff", "must not be negative, got %s", r.Backoff.First)
	}
	if r.Backoff.Multiplier != 0 && !(r.Backoff.Multiplier >= 1) { // catches NaN
		bad("multiplier", "must be at least 1, got %g", r.Backoff.Multiplier)
	}
	if r.Backoff.Max < 0 {
		bad("max_delay", "must not be negative, got %s", r.Backoff.Max)
	} else if r.Backoff.Max > 0 && r.Backoff.First > r.Backoff.Max {
		bad("max_delay", "must be at least backoff (%s), got %s", r.Backoff.First, r.Backoff.Max)
	}
	switch r.Backoff.Jitter {
	case "", JitterFull, JitterEqual, JitterDecorrelated, JitterNone:
	default:
		bad("jitter", "unknown jitter %q (want %s, %s, %s or %s)", r.Backoff.Jitter, JitterFull, JitterEqual, JitterDecorrelated, JitterNone)
	}
	if r.Timeout < 0 {
		bad("timeout", "must not be negative, got %s", r.Timeout)
	}
	if r.Deadline < 0 {
		bad("deadline", "must not be negative, got %s", r.Deadline)
	}
	if rb := r.Budget; rb != nil {
		if !(rb.Percent >= 0) || math.IsInf(rb.Percent, 0) { // catches NaN
			bad("retry_budget.percent", "must not be negative, got %g%%", rb.Percent*100)
		}
		if rb.Min < 0 {
			bad("retry_budget.min", "must not be negative, got %d", rb.Min)
		}
		if rb.Window < 0 {
			bad("retry_budget.window", "must not be negative, got %s", rb.Window)
		}
	}
	if b.TripAfter < 0 {
		bad("trip_after", "must be at least 1, got %d", b.TripAfter)
	}
	if fr := b.FailureRate; fr != nil {
		if !(fr.Threshold > 0 && fr.Threshold <= 1) { // catches NaN
			bad("failure_rate.threshold", "must be above 0%% and at most 100%%, got %g%%", fr.Threshold*100)
		}
		if fr.Window < 1 {
			bad("failure_rate.window", "must be at least 1, got %d", fr.Window)
		}
		if fr.MinAttempts < 0 || fr.MinAttempts > fr.Window {
			bad("failure_rate.min_attempts", "must be between 0 and the window (%d), got %d", fr.Window, fr.MinAttempts)
		}
	}
	if b.OpenFor < 0 {
		bad("open_for", "must not be negative, got %s", b.OpenFor)
	}
	if b.OpenMultiplier != 0 && !(b.OpenMultiplier >= 1) { // catches NaN
		bad("open_multiplier", "must be at least 1, got %g", b.OpenMultiplier)
	}
	if b.OpenMax < 0 {
		bad("open_max", "must not be negative, got %s", b.OpenMax)
	} else if b.OpenMax > 0 && b.OpenFor > b.OpenMax {
		bad("open_max", "must be at least open_for (%s), got %s", b.OpenFor, b.OpenMax)
	} else if b.OpenMax > 0 && b.OpenFor == 0 && !b.LearnOpenFor && defaultPolicy.Breaker.OpenFor > b.OpenMax {
		// open_for left out is the default, which open_max would cut short.
		bad("open_max", "must be at least open_for (%s, the default), got %s", defaultPolicy.Breaker.OpenFor, b.OpenMax)
	}
	if b.Probes < 0 {
		bad("probes", "must be at least 1, got %d", b.Probes)
	}
	if b.ProbeLease < 0 {
		bad("probe_lease", "must not be negative, got %s", b.ProbeLease)
	}
	return errors.Join(errs...)
}
