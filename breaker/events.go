package breaker

import "time"

// EventKind says what an Event records.
type EventKind string

// The event kinds. Failures and transitions are stored in the circuit's
// event log and reach listeners; successes and skips only reach listeners
// (fusebox.WithListener): they are counted (fusebox.Store.Count), not
// logged.
const (
	EventFailure        EventKind = "failure"         // an attempt failed and counted against the breaker
	EventNeutralFailure EventKind = "neutral_failure" // an attempt failed without counting (local network, 4xx)
	EventTransition     EventKind = "transition"      // the circuit changed phase
	EventSuccess        EventKind = "success"         // an attempt succeeded (listeners only)
	EventSkip           EventKind = "skip"            // a call failed fast on an open circuit (listeners only)
)

// Event is one line of a circuit's history: every failure and every
// transition, with the time and the reason.
type Event struct {
	Time    time.Time `json:"time"`
	Circuit string    `json:"circuit"`
	Kind    EventKind `json:"kind"`
	Attempt int       `json:"attempt,omitempty"`
	Reason  string    `json:"reason,omitempty"`
	From    Phase     `json:"from,omitempty"`
	To      Phase     `json:"to,omitempty"`
	For     Duration  `json:"for,omitzero"` // how long an opening lasts
	// TimedOut marks a failure cut short by the attempt's timeout or the
	// call's deadline: a caller sat through the whole of it.
	TimedOut bool `json:"timed_out,omitempty"`
	// Cause is a failure's kind (fusebox.Failure.Cause), for grouping without
	// reading Reason.
	Cause Cause `json:"cause,omitempty"`
	// Since, on a transition, is when the circuit's consecutive failures
	// began (State.FailingSince before the transition): on an opening, the
	// first of the failures that led to it; on a failed probe or a closing,
	// the start of the outage. Zero when there were none.
	Since time.Time `json:"since,omitzero"`
	// Skips, on a transition, is the circuit's skip total (fusebox.Counts.Skips)
	// read just before it was made, so that the skips of an open period are
	// the difference between its opening and its closing. Zero when the
	// total could not be read.
	Skips uint64 `json:"skips,omitempty"`
	// Retry, on a transition a call made, is the retry policy that call ran
	// under, its command-line flags included: what the calls skipped while
	// the circuit stays open would have sat through (the time an outage
	// history says they saved). Zero on a trip or reset by hand and in
	// events written before it was recorded.
	Retry RetryRecord `json:"retry,omitzero"`
}

// RetryRecord is a retry policy (fusebox.RetryPolicy) as an event stores
// it, in the config's words, so that an event log stays readable with cat.
type RetryRecord struct {
	Attempts   int      `json:"attempts,omitempty"`
	Timeout    Duration `json:"timeout,omitzero"`
	Deadline   Duration `json:"deadline,omitzero"`
	Backoff    Duration `json:"backoff,omitzero"`
	Multiplier float64  `json:"multiplier,omitempty"`
	MaxDelay   Duration `json:"max_delay,omitzero"`
	Jitter     string   `json:"jitter,omitempty"`
}
