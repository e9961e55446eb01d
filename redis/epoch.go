package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"time"
)

// A dataset's epoch tells a dataset from the one it replaced: a Redis
// restarted without persistence, or flushed, starts with no data and no
// epoch, and the first state written gives it a new one. PREFIX epoch is a
// hash with no TTL: id, a random token set by the first write (HSETNX), and
// changed, the time (Unix ms, the writer's clock) of the latest state write
// by any host. Every read returns both, in the script that reads the state:
// a host that knew another id, or one, knows the data it saw is gone, and
// how recent the last change it saw anywhere was (package statestore decides
// what of its replica to restore from that).

// epoch is a dataset's epoch as a read found it.
type epoch struct {
	id      string
	changed time.Time
}

func (s *Store) sawEpoch(id, changed any) {
	e := epoch{}
	e.id, _ = id.(string)
	if c, _ := changed.(string); c != "" {
		if ms, err := strconv.ParseInt(c, 10, 64); err == nil {
			e.changed = time.UnixMilli(ms)
		}
	}
	s.epoch.Store(&e)
}

// Epoch returns the dataset's epoch as the Store's last read of a state
// found it: its id ("" when the dataset has none: it lost its data, or no
// state was ever written) and the latest state write by any host (zero when
// unknown); ok is false before any read.
func (s *Store) Epoch() (id string, changed time.Time, ok bool) {
	e := s.epoch.Load()
	if e == nil {
		return "", time.Time{}, false
	}
	return e.id, e.changed, true
}

// ensureEpochScript gives the dataset an epoch when it has none, and
// returns the dataset's.
var ensureEpochScript = script(`
redis.call('HSETNX', KEYS[1], 'id', ARGV[1])
return redis.call('HGET', KEYS[1], 'id')
`)

// EnsureEpoch gives the dataset an epoch when it has none (no state was
// written since it lost its data), in one script call, and returns its id.
func (s *Store) EnsureEpoch(ctx context.Context) (string, error) {
	bctx, cancel := s.budget(ctx)
	defer cancel()
	id, err := ensureEpochScript().Run(bctx, s.c, []string{s.epochKey()}, s.newEpoch).Text()
	return id, wrap("epoch", "", err)
}

// randomToken is 16 random bytes in hex.
func randomToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
