package breaker

import "time"

// FailureRate trips a circuit when, over the last Window attempts (and at
// least MinAttempts of them), the share that failed reaches Threshold.
type FailureRate struct {
	Threshold   float64 // 0 < Threshold <= 1
	Window      int
	MinAttempts int
}

// Policy says when a circuit opens and how it recovers. A zero field means
// its default, which fusebox.Policy.WithDefaults fills in: 3 failures open
// the circuit for 30s, doubling per failed probe up to 5m (at least
// OpenFor), one probe at a time, whose lease lasts the attempt timeout and
// 2s. State's methods take a Policy with its defaults set.
type Policy struct {
	// TripAfter consecutive failed attempts open a closed circuit. It is not
	// used when FailureRate is set.
	TripAfter   int
	FailureRate *FailureRate
	// OpenFor is the first open period; each failed half-open probe
	// multiplies the next one by OpenMultiplier, up to OpenMax. A success
	// closes the circuit and resets the period.
	OpenFor        time.Duration
	OpenMultiplier float64
	OpenMax        time.Duration
	// LearnOpenFor (open_for: auto) learns an outage's first open period
	// from how the circuit's recent outages recovered (State.LearnedOpenFor),
	// between 5s and OpenMax; OpenFor is the period until
	// there is anything to learn from.
	LearnOpenFor bool
	// Probes is how many callers, across all processes sharing the store,
	// may try a half-open circuit at once. Each holds a lease of ProbeLease.
	Probes     int
	ProbeLease time.Duration
}
