package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/bounds"
)

// Peek reads the circuit's state and counters as Load and Counts do, in
// scripts Redis itself holds to reading (flags=no-writes): a key of the
// wrong type, a record over the bounds or a state that does not decode is
// reported as an error wrapping fusebox.ErrDamaged, left where it is, with
// the fresh state or zero counts Load and Counts would start from. The
// dataset's epoch is neither checked nor given.
func (s *Store) Peek(ctx context.Context, name string) (breaker.State, fusebox.Counts, error) {
	if err := fusebox.ValidateName(name); err != nil {
		return breaker.State{}, fusebox.Counts{}, wrap("peek", name, err)
	}
	st, err := s.peekState(ctx, name)
	if err != nil && !errors.Is(err, fusebox.ErrDamaged) {
		return st, fusebox.Counts{}, err
	}
	c, cerr := s.peekCounts(ctx, name)
	return st, c, errors.Join(err, cerr)
}

// peekState reads the circuit's state for Peek.
func (s *Store) peekState(ctx context.Context, name string) (breaker.State, error) {
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

// peekCounts reads the circuit's counters for Peek: a key of the wrong type
// or a counter longer than a number (which Counts would move aside) is
// damage, reported.
func (s *Store) peekCounts(ctx context.Context, name string) (fusebox.Counts, error) {
	k := s.countsKey(name)
	bctx, cancel := s.budget(ctx)
	defer cancel()
	vals, err := peekCountsScript().Run(bctx, s.c, []string{k}, maxVersionLen).Slice()
	if err != nil {
		return fusebox.Counts{}, wrap("peek", name, err)
	}
	switch len(vals) {
	case 4:
		return countsOf(vals), nil
	case 2:
		t, _ := vals[1].(string)
		return fusebox.Counts{}, fmt.Errorf("redis key %s is %w (it is a %s, not a %s)", k, fusebox.ErrDamaged, t, typeHash)
	case 1:
		return fusebox.Counts{}, fmt.Errorf("redis key %s is %w (a counter holds more than the %d digits of a number)", k, fusebox.ErrDamaged, maxVersionLen)
	}
	return fusebox.Counts{}, fmt.Errorf("redis peek %s: %d values from the counts script, want 1, 2 or 4", k, len(vals))
}

// peekCountsScript reads the counters as countsScript does, without
// writing: a key that is not a hash, or a counter longer than a number, is
// reported and not read.
//
//	KEYS: counts; ARGV: max bytes of a counter
//	returns: {successes, failures, skips, last}, {false, type}, or {false}
var peekCountsScript = script(`#!lua flags=no-writes
local t = redis.call('TYPE', KEYS[1]).ok
if t ~= 'none' and t ~= 'hash' then return {false, t} end
for _, f in ipairs({'successes', 'failures', 'skips', 'last'}) do
  if redis.call('HSTRLEN', KEYS[1], f) > tonumber(ARGV[1]) then return {false} end
end
return redis.call('HMGET', KEYS[1], 'successes', 'failures', 'skips', 'last')
`)

// PeekNames lists the circuits as Names does, in a script Redis itself
// holds to reading: a list of the wrong type or of more than the most names
// is reported as an error wrapping fusebox.ErrDamaged and left where it is,
// and the names whose keys have expired are left out, not dropped.
func (s *Store) PeekNames(ctx context.Context) ([]string, error) {
	k := s.namesKey()
	bctx, cancel := s.budget(ctx)
	defer cancel()
	vals, err := peekNamesScript().Run(bctx, s.c, []string{k}, s.prefix, maxListed, fusebox.MaxNameLen).StringSlice()
	if err != nil {
		return nil, wrap("peek names", "", err)
	}
	switch {
	case len(vals) == 2 && vals[0] == "type":
		return nil, fmt.Errorf("redis key %s is %w (it is a %s, not a %s)", k, fusebox.ErrDamaged, vals[1], typeZSet)
	case len(vals) == 2 && vals[0] == "size":
		return nil, fmt.Errorf("redis key %s is %w (it lists %s names, more than the %d circuits a store lists)", k, fusebox.ErrDamaged, vals[1], maxListed)
	case len(vals) == 0 || vals[0] != "":
		return nil, fmt.Errorf("redis peek names %s: the script answered %q", k, vals)
	}
	names := vals[1:]
	slices.Sort(names)
	return names, nil
}

// peekNamesScript lists the circuits as namesScript does, without writing:
// a list of the wrong type or of more than the most names is reported, not
// read.
//
//	KEYS: names; ARGV: prefix, most names, longest name
//	returns: {"", name, name, ...}, {"type", type} or {"size", names}
var peekNamesScript = script(`#!lua flags=no-writes
local t = redis.call('TYPE', KEYS[1]).ok
if t ~= 'none' and t ~= 'zset' then return {'type', t} end
local n = redis.call('ZCARD', KEYS[1])
if n > tonumber(ARGV[2]) then return {'size', tostring(n)} end
local out = {''}
for _, m in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if #m <= tonumber(ARGV[3]) and redis.call('EXISTS', ARGV[1] .. 's:' .. m, ARGV[1] .. 'c:' .. m) > 0 then
    table.insert(out, m)
  end
end
return out
`)
