package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/bounds"
)

// Peek reads the circuit's state as Load does, in one script Redis itself
// holds to reading (flags=no-writes): a key of the wrong type, a record over
// the bounds or a state that does not decode is reported as an error
// wrapping fusebox.ErrDamaged, left where it is, with the fresh state Load
// would start from. The dataset's epoch is neither checked nor given.
func (s *Store) Peek(ctx context.Context, name string) (breaker.State, error) {
	if err := fusebox.ValidateName(name); err != nil {
		return breaker.State{}, wrap("peek", name, err)
	}
	k := s.stateKey(name)
	bctx, cancel := s.budget(ctx)
	defer cancel()
	vals, err := peekScript().Run(bctx, s.c, []string{k}, bounds.MaxStateSize, maxVersionLen).Slice()
	if err != nil {
		return breaker.State{}, wrap("peek", name, err)
	}
	fresh := breaker.State{Name: name}
	damaged := func(problem error) (breaker.State, error) {
		return fresh, fmt.Errorf("redis key %s is %w (%w)", k, fusebox.ErrDamaged, problem)
	}
	switch len(vals) {
	case 2:
	case 3:
		t, _ := vals[2].(string)
		return damaged(errors.New("it is a " + t + ", not a " + typeHash))
	case 4:
		size, _ := vals[2].(int64)
		if size > bounds.MaxStateSize {
			return damaged(fmt.Errorf("its state holds %d bytes, more than the %d a record may", size, bounds.MaxStateSize))
		}
		vlen, _ := vals[3].(int64)
		return damaged(fmt.Errorf("its version holds %d bytes, more than a number", vlen))
	default:
		return breaker.State{}, fmt.Errorf("redis peek %s: %d values from the peek script, want 2, 3 or 4", k, len(vals))
	}
	raw, _ := vals[1].(string)
	if raw == "" {
		return fresh, nil
	}
	st := fresh
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return damaged(err)
	}
	if st.Name != name {
		return damaged(errors.New("it names another circuit"))
	}
	return st, nil
}

// peekScript reads a state hash's version and state, as readScript does,
// without writing: a key that is not a hash, or a record larger than a
// record may be, is measured and not sent.
//
//	KEYS: state; ARGV: max state bytes, max version bytes
//	returns: {version, state}, {false, false, type}, or {false, false, state bytes, version bytes}
var peekScript = script(`#!lua flags=no-writes
local t = redis.call('TYPE', KEYS[1]).ok
if t ~= 'none' and t ~= 'hash' then return {false, false, t} end
local n = redis.call('HSTRLEN', KEYS[1], 'state')
local m = redis.call('HSTRLEN', KEYS[1], 'v')
if n > tonumber(ARGV[1]) or m > tonumber(ARGV[2]) then return {false, false, n, m} end
return redis.call('HMGET', KEYS[1], 'v', 'state')
`)
