// Package redis is a fusebox.Store and answer.Store kept in Redis (or
// Valkey), so that circuits are shared by every host that reaches the same
// server: the Proxmox VM, the Raspberry Pis and the n8n container that call
// one Zigbee bridge all see it trip.
//
// # Keys
//
// Every key starts with a prefix (default "fusebox:"; WithPrefix):
//
//	PREFIX s:NAME     hash: v (the record's version), state (the State as JSON)
//	PREFIX c:NAME     hash: successes, failures, skips (HINCRBY), last (LastSuccess)
//	PREFIX e:NAME     stream of the circuit's events, capped (XADD MAXLEN ~)
//	PREFIX names      sorted set: circuit names, scored by last write (ms)
//	PREFIX a:KEY      a stored answer, as JSON
//	PREFIX answers    sorted set: answer keys, scored by last write (ms)
//	PREFIX x:KEY      Exclusive's lock: SET NX PX with a random token
//	PREFIX damaged:K  a key K of the wrong type, a state that did not decode, or a record past its bound, moved aside (with the TTL)
//	PREFIX epoch      hash: id (set by the first write to a dataset), changed (the latest state write, ms), mended (it replaced a damaged one); see epoch.go
//	PREFIX bf:NAME    sorted set: a retry budget's first attempts (budget.go); PREFIX br:NAME its retries
//
// A circuit's keys expire after the store's TTL (WithTTL, default
// 7 days), refreshed on every write, so idle circuits go away
// by themselves. A circuit tripped until reset has its keys persisted
// instead: someone meant it. The two sorted sets carry no TTL (a tripped
// circuit must stay listed); Names and GC drop members whose keys are gone.
//
// # Why Update is optimistic, and how conflicts are retried
//
// The breaker state machine stays in Go (breaker.State's methods), where it
// is tested, and is not rewritten in Lua. Update therefore reads the record
// and its version (HMGET, one round trip), runs fn with no lock held, and
// writes the result back with a compare-and-set Lua script that stores it,
// bumps the version, appends the events and refreshes the TTLs only when the
// version is still the one read (a second round trip). When another process
// wrote in between, the script changes nothing and Update starts again from
// a fresh read: fn runs again, as the Store contract allows, on the newer
// state. A retry waits a short random time (up to a few milliseconds,
// growing with each conflict) so that contending hosts spread out, and
// Update gives up with an error after the update timeout (WithUpdateTimeout,
// default 5s). No lock is ever held across fn, let alone across the user's
// call: the flaw of a distributed breaker that locks around its request.
// Retries counts the conflicts a Store has retried.
//
// Counters are HINCRBYs in a small script that also raises LastSuccess as a
// maximum, so a healthy call is one round trip and takes no lock.
//
// # Bounds, and what counts as Redis being down
//
// Every command is bounded: 2s to connect and 5s to answer by default
// (WithTimeouts, or the URL's dial_timeout, read_timeout and
// write_timeout), with go-redis's own retries off. A server that refuses the
// connection fails at once; the bound is for one that is slow to answer, or
// a host so busy that its process is not scheduled to read the answer in
// time. Slow is not down: on a host with every core saturated a Redis round
// trip can take far longer than on an idle one, and Go reports a timeout
// when the process is scheduled after the deadline, even with the answer
// waiting in the socket; so the bounds are seconds, not milliseconds (the
// figures behind them: docs/benchmarks.md, "Figures behind bounds in the
// code").
// Answered tells the errors of a Redis that answered (a per-record problem)
// from those of one that is unavailable. Falling back to the local replica
// when Redis is unavailable is package statestore's job, not this package's.
//
// # Damaged keys
//
// A key of the wrong type (a SET over a circuit's hash, by hand or by
// another program) makes Redis refuse every command on it. The store then
// renames the key aside, to PREFIX damaged:KEY with the store's TTL, logs one
// ERROR naming the key and the circuit, and runs the command again on a
// fresh key: the circuit starts afresh, and no other circuit notices. A
// state whose JSON does not decode is moved aside the same way. So is every
// other key a script reads: the epoch (checked in each script that reads
// it, see epoch.go), a budget's sets (more than a million attempts), the
// lists (more than 100,000 names or answers; a listed name longer than a
// name is dropped), an answer and a lock (one with no lease, or a longer
// one than a lock takes).
//
// Records have the file store's bounds (bounds.MaxStateSize and the
// rest), checked by the script that reads them, inside Redis, before
// anything is sent: a state larger than a state may be, or a counter that
// is not a number, is moved aside unread; a stream entry larger than an
// event is deleted; a circuit's events are read newest first up to
// bounds.MaxEventsRead; a reason read back is cut to bounds.MaxReason.
//
// A Store is safe for concurrent use by goroutines and by processes on any
// number of hosts.
package redis
