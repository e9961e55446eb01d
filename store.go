package fusebox

import (
	"context"
	"time"
)

// Store keeps circuit state where every process that shares a circuit sees
// it: files on one host, Redis across hosts, memory inside one process.
// Implementations must be safe for concurrent use by goroutines and, where
// they persist, by processes.
//
// Errors: every method may fail when the store itself is unusable
// (unreadable, read-only, full, unreachable). Callers must then fail open (see
// Circuits.Do), so implementations return such errors rather than retrying
// for long. A damaged record is not an error: the store moves it aside, warns,
// and carries on with a fresh one.
type Store interface {
	// Load returns the circuit's state without taking a lock; it may be stale
	// by the time the caller acts on it, but it is never torn. A circuit
	// never stored is a zero State with Name set and no error.
	Load(ctx context.Context, name string) (State, error)

	// Update applies fn to the current state with exclusive access across
	// every process sharing the store and, when fn reports a change, stores
	// the result and appends the events fn returns. fn may be called more
	// than once (an optimistic store retries on conflict), so it must depend
	// only on its argument. Update returns the state as fn left it (stored
	// only when fn reported a change).
	Update(ctx context.Context, name string, fn func(*State) (events []Event, changed bool)) (State, error)

	// RecordSkip counts one call failed fast on an open circuit. It is on the
	// hot path of every skipped call, so it takes no lock and stores nothing
	// else.
	RecordSkip(ctx context.Context, name string) error

	// Skips returns how many calls RecordSkip has counted for the circuit.
	Skips(ctx context.Context, name string) (uint64, error)

	// Names lists the circuits the store holds state for, sorted.
	Names(ctx context.Context) ([]string, error)

	// Events returns the circuit's events at or after since, oldest first.
	Events(ctx context.Context, name string, since time.Time) ([]Event, error)

	// SaveAnswer keeps the last good answer of an endpoint or chain, replacing
	// the previous one; LoadAnswer returns it, with ok false when there is
	// none.
	SaveAnswer(ctx context.Context, key string, a Answer) error
	LoadAnswer(ctx context.Context, key string) (a Answer, ok bool, err error)

	// Exclusive runs fn while holding key's exclusive lock, shared by every
	// process using the store, so that callers arriving together (six cron
	// jobs asking for the weather in the same second) do slow work, such as
	// the upstream call whose answer they share, once. Waiting gives up
	// without running fn when ctx ends or after the store's own lock
	// timeout, returning an error; the caller then does the work anyway.
	// Otherwise Exclusive returns fn's error. Keys name answers, not
	// circuits: the two never share a lock.
	Exclusive(ctx context.Context, key string, fn func() error) error

	// GC removes circuits and answers not updated for unusedFor, and events
	// older than eventsFor, as of now. A circuit tripped until reset is kept:
	// someone meant it.
	GC(ctx context.Context, now time.Time, unusedFor, eventsFor time.Duration) (GCReport, error)

	// Close releases the store's resources.
	Close() error
}

// Defaults for GC.
const (
	DefaultGCAfter        = 7 * 24 * time.Hour
	DefaultEventRetention = 30 * 24 * time.Hour
)

// GCReport says what a GC removed.
type GCReport struct {
	Circuits []string // circuits whose state was removed
	Answers  []string // stored answers removed
	Events   int      // event lines dropped
}

// Answer is a stored good response, served when fresh or, when every endpoint
// has failed, when stale.
type Answer struct {
	Source   string    `json:"source"` // the endpoint that gave it
	Status   int       `json:"status,omitempty"`
	StoredAt time.Time `json:"stored_at"`
	Body     []byte    `json:"body"` // what the caller prints: the extraction, or the raw body
}
