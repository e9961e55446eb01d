package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
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
//
// Any client can write the epoch, so every script that reads it checks it
// first (epochCheck): a key that is not a hash, an id that is not a token
// of at most MaxEpochID hex digits, or a changed that is not a number of at
// most maxVersionLen digits is damage, moved aside to PREFIX damaged:epoch
// in the same step, unread, with one ERROR, and replaced by a new epoch
// marked mended: the dataset did not lose its data, only its epoch, so a
// host that finds a new id there adopts it without restoring anything
// (Store.EpochMended), and every circuit stays protected.

// epoch is a dataset's epoch as a read found it.
type epoch struct {
	id      string
	changed time.Time
	mended  bool
}

// sawEpoch keeps the epoch a script read (its HMGET of id, changed and
// mended), and logs the one ERROR of an epoch the script moved aside
// (problem is then not "").
func (s *Store) sawEpoch(fields []any, problem any) {
	if p, _ := problem.(string); p != "" {
		s.logDamaged("", s.epochKey(), errors.New(p))
	}
	e := epoch{}
	if len(fields) != 3 {
		s.epoch.Store(&e)
		return
	}
	e.id, _ = fields[0].(string)
	if c, _ := fields[1].(string); c != "" {
		if ms, err := strconv.ParseInt(c, 10, 64); err == nil {
			e.changed = time.UnixMilli(ms)
		}
	}
	e.mended = fields[2] != nil
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

// EpochMended reports whether the epoch the Store last read replaced a
// damaged one: the dataset kept its data, and a new id says nothing lost.
func (s *Store) EpochMended() bool {
	e := s.epoch.Load()
	return e != nil && e.mended
}

// MaxEpochID bounds an epoch's id: randomToken's 32 hex digits, with room.
// An id Epoch returns is at most this long; a host's copy of it
// (package statestore) is bounded by it too.
const MaxEpochID = 64

// epochCheck is Lua that scripts reading the epoch start with: its
// epoch_damage(epoch, aside, TTL ms, new id) moves an epoch that is not one
// this package writes aside, unread (it measures before it reads), puts a
// new one marked mended in its place, and returns what was wrong, "" when
// nothing was.
var epochCheck = `
local function epoch_damage(k, aside, ttl, id)
  local t = redis.call('TYPE', k).ok
  local bad = ''
  if t == 'hash' then
    local n, c = redis.call('HSTRLEN', k, 'id'), redis.call('HSTRLEN', k, 'changed')
    if n > ` + strconv.Itoa(MaxEpochID) + ` or c > ` + strconv.Itoa(maxVersionLen) + ` then
      bad = 'it holds an id of ' .. n .. ' bytes and a time of ' .. c .. ', more than an epoch may'
    else
      local e = redis.call('HMGET', k, 'id', 'changed')
      if e[1] and not string.match(e[1], '^%x+$') then bad = 'its id is not a token'
      elseif e[2] and not string.match(e[2], '^%d+$') then bad = 'its time is not a number' end
    end
  elseif t ~= 'none' then
    bad = 'it is a ' .. t .. ', not a hash'
  end
  if bad ~= '' then
    redis.call('RENAME', k, aside)
    redis.call('PEXPIRE', aside, ttl)
    redis.call('HSET', k, 'id', id, 'mended', '1')
  end
  return bad
end
`

// ensureEpochScript gives the dataset an epoch when it has none, and
// returns the dataset's, and what was wrong with the epoch it moved aside.
//
//	KEYS: epoch, aside; ARGV: new id, TTL ms
var ensureEpochScript = script(epochCheck + `
local bad = epoch_damage(KEYS[1], KEYS[2], ARGV[2], ARGV[1])
redis.call('HSETNX', KEYS[1], 'id', ARGV[1])
return {redis.call('HGET', KEYS[1], 'id'), bad}
`)

// EnsureEpoch gives the dataset an epoch when it has none (no state was
// written since it lost its data), in one script call, and returns its id.
func (s *Store) EnsureEpoch(ctx context.Context) (string, error) {
	bctx, cancel := s.budget(ctx)
	defer cancel()
	k := s.epochKey()
	vals, err := ensureEpochScript().Run(bctx, s.c, []string{k, s.asideName(k)}, s.newEpoch, ttlArg(s.ttl)).Slice()
	if err != nil {
		return "", wrap("epoch", "", err)
	}
	if len(vals) != 2 {
		return "", fmt.Errorf("redis epoch: %d values from the epoch script, want 2", len(vals))
	}
	if p, _ := vals[1].(string); p != "" {
		s.logDamaged("", k, errors.New(p))
	}
	id, _ := vals[0].(string)
	return id, nil
}

// randomToken is 16 random bytes in hex.
func randomToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
