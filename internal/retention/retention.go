// Package retention holds how long fusebox keeps what goes unused, when
// nothing says otherwise: the defaults of the config's gc_after and
// history keep, of the file store's gc and of Redis's key TTL, which
// fusebox.Admin.GC takes as arguments.
package retention

import "time"

// The defaults.
const (
	GCAfter = 7 * 24 * time.Hour  // a circuit (State, Counts, events) and its stored answers unused this long are removed
	Events  = 30 * 24 * time.Hour // events are kept this long
)
