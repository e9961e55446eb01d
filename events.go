package fusebox

import "time"

// EventKind says what an Event records.
type EventKind string

// The event kinds.
const (
	EventFailure        EventKind = "failure"         // an attempt failed and counted against the breaker
	EventNeutralFailure EventKind = "neutral_failure" // an attempt failed without counting (local network, 4xx)
	EventTransition     EventKind = "transition"      // the circuit changed phase
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
}
