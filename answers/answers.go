// Package answers holds the contract for keeping an endpoint's or a chain's
// last good answer, which httpcall serves when it is fresh and stands in
// with when every endpoint fails (fresh: and stale: in the config). The
// stores (file, redis, mem) implement it beside the circuit store; it lives
// here, next to the HTTP code that uses it, rather than with the breaker.
// Standard library only.
package answers

import (
	"context"
	"time"
)

// Store keeps the last good answer of an endpoint or chain, so that a
// fresh one answers without a call and a stale one stands in when every
// endpoint fails. Keys name endpoints and chains (fusebox.ValidateName), not
// circuits: an answer and a circuit of the same name never share a lock.
// A circuit store (fusebox.Store) that also keeps answers implements it; the
// same concurrency and error rules apply.
type Store interface {
	// SaveAnswer replaces the key's answer. The last writer wins.
	SaveAnswer(ctx context.Context, key string, a Answer) error

	// LoadAnswer returns the key's answer, with ok false when there is
	// none (or it was damaged and moved aside).
	LoadAnswer(ctx context.Context, key string) (a Answer, ok bool, err error)

	// Exclusive runs fn while holding key's exclusive lock, shared by every
	// process using the store, so that callers arriving together (six cron
	// jobs asking for the weather in the same second) do slow work, such as
	// the upstream call whose answer they share, once. Waiting gives up
	// without running fn when ctx ends or after the store's own lock
	// timeout, returning an error (matching fusebox.ErrLockTimeout for the
	// lock timeout); the caller then does the work anyway. Otherwise
	// Exclusive returns fn's error.
	Exclusive(ctx context.Context, key string, fn func() error) error
}

// Answer is a good response kept by a Store, served when fresh or, when
// every endpoint has failed, when stale.
type Answer struct {
	Source   string    `json:"source"` // the endpoint that gave it
	Status   int       `json:"status,omitempty"`
	StoredAt time.Time `json:"stored_at"`
	Body     []byte    `json:"body"` // what the caller prints: the extraction, or the raw body
}
