package fusebox

import (
	"context"
	"errors"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// Store keeps circuit state where every process that shares a circuit sees
// it: files on one host, Redis across hosts, memory inside one process.
// Implementations must be safe for concurrent use by goroutines and, where
// they persist, by processes. storetest.Run checks every rule written here.
//
// A circuit's record has two parts that change at different rates: its
// State, which moves only on a transition or a failure and is changed under
// the store's lock with Update; and its Counts, which grow on every call and
// are added to with Count, without a lock. A healthy call therefore costs a
// lock-free Load and a Count, and never a write of the State.
//
// Store holds only what the breaker needs. What administration needs besides
// (the circuits' names, their events, garbage collection) is the Admin
// contract, which every store of this module implements too.
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
	Load(ctx context.Context, name string) (breaker.State, error)

	// Update applies fn to the current state with exclusive access across
	// every process sharing the store and, when fn reports a change, stores
	// the result and appends the events fn returns, in one step: a reader
	// sees the state before or after, never a mix.
	//
	// fn may be called more than once (an optimistic store retries on
	// conflict) and only its last call counts: it must change nothing but
	// the State it is given and variables of its caller that each call sets
	// afresh. It may read the clock. Update returns the state as fn's last
	// call left it (stored only when fn reported a change). No lock is held
	// once Update returns: a caller never holds one across its own work.
	Update(ctx context.Context, name string, fn func(*breaker.State) (events []breaker.Event, changed bool)) (breaker.State, error)

	// Count adds c's Successes, Failures and Skips to the circuit's
	// counters, and raises its LastSuccess to c.LastSuccess when that is
	// later. Counters only grow, so adding takes no lock, touches nothing
	// else and needs no flush to disk: it is on the path of every healthy and
	// every skipped call. Concurrent adds from any number of processes are
	// all kept; a crash of the machine may lose the latest.
	Count(ctx context.Context, name string, c Counts) error

	// Counts returns the circuit's counters: zero for a circuit never
	// counted.
	Counts(ctx context.Context, name string) (Counts, error)

	// Close releases the store's resources.
	Close() error
}

// Admin is the administrative side of a Store: what status, history, the
// daemon's APIs, notifiers and gc read or do across circuits, beside the
// breaker's own per-circuit calls. The same concurrency and error rules
// apply.
type Admin interface {
	Store

	// Peek returns the circuit's State and Counts as Load and Counts do,
	// but changes nothing anywhere: no repair, no record moved aside, no
	// write of any kind (fusebox explain promises as much). A damaged
	// record, one Load or Counts would move aside, is reported as an error
	// wrapping ErrDamaged that names it and its problem, with the fresh
	// State or zero Counts they would then start from, and the other part
	// as it is stored.
	Peek(ctx context.Context, name string) (breaker.State, Counts, error)

	// PeekNames lists the circuits as Names does, changing nothing
	// anywhere: a damaged list, one Names would move aside, is reported as
	// an error wrapping ErrDamaged, with no name.
	PeekNames(ctx context.Context) ([]string, error)

	// Names lists the circuits the store holds a State or Counts for,
	// sorted.
	Names(ctx context.Context) ([]string, error)

	// Events returns the circuit's events at or after since, oldest first.
	Events(ctx context.Context, name string, since time.Time) ([]breaker.Event, error)

	// ScanEvents calls fn with each of the circuit's events at or after
	// since, oldest first, until fn returns false. Events are decoded one
	// at a time and none is kept: a reader that keeps a summary of a log
	// (a daemon's outage timeline, failures by reason) holds the summary
	// and at most 16 MiB of the stored log (internal/bounds), never the log
	// decoded, which takes several times the log's size. A store that
	// fails returns its error before handing fn any event.
	ScanEvents(ctx context.Context, name string, since time.Time, fn func(breaker.Event) bool) error

	// AllEvents returns the events of every circuit at or after since,
	// oldest first (events of the same time in circuit-name order): what
	// an outage history or a notifier reads to catch up.
	AllEvents(ctx context.Context, since time.Time) ([]breaker.Event, error)

	// GC removes, as of now, circuits (State, Counts and events) and
	// stored answers not used for unusedFor, and events older than
	// eventsFor. A circuit whose trip by hand has not ended as of now (until
	// reset, or timed: breaker.State.TripInForce) is kept: someone meant it.
	GC(ctx context.Context, now time.Time, unusedFor, eventsFor time.Duration) (GCReport, error)
}

// ErrDamaged is a record Admin.Peek or Admin.PeekNames found damaged: Load,
// Counts or Names would move it aside and start it afresh.
var ErrDamaged = errors.New("damaged")

// Counts are a circuit's totals since it was first used, kept apart from its
// State because they change on every call (see Store.Count).
type Counts struct {
	Successes   uint64    `json:"successes"`
	Failures    uint64    `json:"failures"` // failed attempts that counted against the breaker
	Skips       uint64    `json:"skips"`    // calls failed fast on an open circuit
	LastSuccess time.Time `json:"last_success,omitzero"`
}

// GCReport says what a GC removed.
type GCReport struct {
	Circuits []string // circuits whose state was removed
	Answers  []string // stored answers removed
	Events   int      // event lines dropped
}
