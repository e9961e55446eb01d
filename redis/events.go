package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/bounds"
	"github.com/fusebox-hq/fusebox/internal/eventorder"
)

// Events reads the circuit's stream, within the bounds of every store
// (see eventsScript). Event times are the callers' and need not follow the
// stream's own IDs, so since is applied here, not by the script.
func (s *Store) Events(ctx context.Context, name string, since time.Time) ([]breaker.Event, error) {
	if err := fusebox.ValidateName(name); err != nil {
		return nil, err
	}
	streams, err := s.streams(ctx, []string{name})
	if err != nil {
		return nil, wrap("events", name, err)
	}
	out, _ := decodeEvents(streams[0], since)
	return out, nil
}

// ScanEvents reads the circuit's stream as Events does, and hands fn its
// events at or after since one at a time, decoding each only when fn
// has taken the one before.
func (s *Store) ScanEvents(ctx context.Context, name string, since time.Time, fn func(breaker.Event) bool) error {
	if err := fusebox.ValidateName(name); err != nil {
		return err
	}
	streams, err := s.streams(ctx, []string{name})
	if err != nil {
		return wrap("events", name, err)
	}
	for i, m := range streams[0] {
		streams[0][i] = entry{} // what fn has seen is garbage
		var e breaker.Event
		if json.Unmarshal([]byte(m.raw), &e) != nil || e.Time.Before(since) {
			continue
		}
		e.Reason = bounds.ClipReason(e.Reason)
		if !fn(e) {
			break
		}
	}
	return nil
}

// entry is one event of a stream, as stored: its stream ID and its JSON.
type entry struct{ id, raw string }

// decodeEvents returns the events at or after since, their reasons cut to
// bounds.MaxReason, and the stream IDs of those before it. An entry that
// does not decode is skipped.
func decodeEvents(entries []entry, since time.Time) (keep []breaker.Event, older []string) {
	for _, m := range entries {
		var e breaker.Event
		if json.Unmarshal([]byte(m.raw), &e) != nil {
			continue
		}
		if e.Time.Before(since) {
			older = append(older, m.id)
			continue
		}
		e.Reason = bounds.ClipReason(e.Reason)
		keep = append(keep, e)
	}
	return keep, older
}

// AllEvents reads every listed circuit's stream in one pipeline.
func (s *Store) AllEvents(ctx context.Context, since time.Time) ([]breaker.Event, error) {
	names, err := s.listed(ctx)
	if err != nil {
		return nil, wrap("all events", "", err)
	}
	streams, err := s.streams(ctx, names)
	if err != nil {
		return nil, wrap("all events", "", err)
	}
	var out []breaker.Event
	for _, entries := range streams {
		evs, _ := decodeEvents(entries, since)
		out = append(out, evs...)
	}
	eventorder.Sort(out)
	return out, nil
}

// listed returns the circuits with a state or counters, as namesScript
// finds them, unsorted.
func (s *Store) listed(ctx context.Context) (names []string, err error) {
	var vals []string
	k := s.namesKey()
	err = s.mended(ctx, "", []typedKey{{k, typeZSet}}, func() (err error) {
		bctx, cancel := s.budget(ctx)
		defer cancel()
		vals, err = namesScript().Run(bctx, s.c, []string{k, s.asideName(k)}, s.prefix, maxListed, fusebox.MaxNameLen, ttlArg(s.ttl)).StringSlice()
		return err
	})
	if err != nil || len(vals) == 0 {
		return nil, err
	}
	if vals[0] != "0" {
		s.logDamaged("", k, fmt.Errorf("it lists %s names, more than the %d circuits a store lists", vals[0], maxListed))
	}
	return vals[1:], nil
}

// maxListed bounds the list of circuit names, and of stored answers: a
// list longer than that is damage (another program's, or an attack's), moved
// aside unread; it is rebuilt as circuits and answers are written.
const maxListed = 100_000

// eventsScript reads a stream newest first, a few entries at a time so
// that Redis holds little of it at once, and returns the newest entries
// within the bounds of every store: at most ARGV[1] of them (and of those
// it looks at), each of at most
// bounds.MaxEventSize, bounds.MaxEventsRead in all. An entry larger than
// an event may be (or with no event in it) is damage: it is deleted, and
// counted in the reply's first element so that the caller logs it once.
//
//	KEYS: events; ARGV: most entries, most bytes of one, most bytes in all
//	returns: {entries deleted, id, event, id, event, ...}, newest first
var eventsScript = script(`
local most, line, all = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local out, total, kept, seen, bad, from = {0}, 0, 0, 0, {}, '+'
while kept < most and seen < most do
  local batch = redis.call('XREVRANGE', KEYS[1], from, '-', 'COUNT', 16)
  if #batch == 0 then break end
  for _, e in ipairs(batch) do
    seen = seen + 1
    local f, v = e[2], nil
    for i = 1, #f - 1, 2 do
      if f[i] == 'e' then v = f[i + 1] end
    end
    if v == nil or #v > line then
      table.insert(bad, e[1])
    else
      total = total + #v
      if total > all or kept >= most then
        most = kept
        break
      end
      kept = kept + 1
      table.insert(out, e[1])
      table.insert(out, v)
    end
  end
  from = '(' .. batch[#batch][1]
end
if #bad > 0 then
  redis.call('XDEL', KEYS[1], unpack(bad))
  out[1] = #bad
end
return out
`)

// streams reads the event streams of names in one pipeline of
// eventsScript, oldest entry first. A stream whose key has the wrong type
// is moved aside and read as empty; an entry too large to be an event is
// deleted, with one ERROR for the stream.
func (s *Store) streams(ctx context.Context, names []string) ([][]entry, error) {
	if len(names) == 0 {
		return nil, nil
	}
	cmds, err := s.pipelineEvents(ctx, names)
	if goredis.HasErrorPrefix(err, "NOSCRIPT") { // a Redis restarted since the script was loaded
		bctx, cancel := s.budget(ctx)
		err = eventsScript().Load(bctx, s.c).Err()
		cancel()
		if err == nil {
			cmds, err = s.pipelineEvents(ctx, names)
		}
	}
	out := make([][]entry, len(names))
	for i, c := range cmds {
		vals, cerr := c.Slice()
		switch {
		case cerr == nil:
			out[i] = s.entries(names[i], vals)
		case wrongType(cerr):
			s.setAsideWrongTypes(ctx, names[i], []typedKey{{s.eventsKey(names[i]), typeStream}})
		default:
			return nil, cerr
		}
	}
	if err != nil && err != goredis.Nil && !wrongType(err) {
		return nil, err
	}
	return out, nil
}

func (s *Store) pipelineEvents(ctx context.Context, names []string) ([]*goredis.Cmd, error) {
	bctx, cancel := s.budget(ctx)
	defer cancel()
	cmds := make([]*goredis.Cmd, len(names))
	_, err := s.c.Pipelined(bctx, func(p goredis.Pipeliner) error {
		for i, n := range names {
			cmds[i] = eventsScript().EvalSha(bctx, p, []string{s.eventsKey(n)}, s.eventsRead(), bounds.MaxEventSize, bounds.MaxEventsRead)
		}
		return nil
	})
	return cmds, err
}

// eventsRead is how many entries of a stream are read: its cap, which
// XADD's MAXLEN ~ may pass by a node's worth, and room for a cap lowered
// since the stream was written.
func (s *Store) eventsRead() int { return 2*s.maxEvents + 100 }

// entries turns eventsScript's reply into the stream's entries, oldest
// first, and logs the entries it deleted as damage.
func (s *Store) entries(name string, vals []any) []entry {
	if len(vals) == 0 {
		return nil
	}
	if n, _ := vals[0].(int64); n > 0 {
		s.logDamaged(name, s.eventsKey(name), fmt.Errorf("%d entries of its stream are not events of at most %d bytes; they are deleted", n, bounds.MaxEventSize))
	}
	out := make([]entry, 0, (len(vals)-1)/2)
	for i := len(vals) - 2; i >= 1; i -= 2 {
		id, _ := vals[i].(string)
		raw, _ := vals[i+1].(string)
		out = append(out, entry{id, raw})
	}
	return out
}

// namesScript lists the circuits that still have a state or counters and
// drops the names whose keys have expired, or that are no circuit's name
// (longer than a name may be), in one step, so that a circuit written
// meanwhile is never dropped. A list of more than the most names is moved
// aside first, unread, and the reply's first element says how many it held.
//
//	KEYS: names, aside; ARGV: prefix, most names, longest name, TTL ms
//	returns: {names moved aside ("0": none), name, name, ...}
var namesScript = script(`
local n = redis.call('ZCARD', KEYS[1])
if n > tonumber(ARGV[2]) then
  redis.call('RENAME', KEYS[1], KEYS[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
  return {tostring(n)}
end
local out = {'0'}
for _, m in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if #m <= tonumber(ARGV[3]) and redis.call('EXISTS', ARGV[1] .. 's:' .. m, ARGV[1] .. 'c:' .. m) > 0 then
    table.insert(out, m)
  else
    redis.call('ZREM', KEYS[1], m)
  end
end
return out
`)

// boundScript moves a sorted set of more than the most members aside,
// unread, and returns how many it held (0 when it was within the bound).
//
//	KEYS: set, aside; ARGV: most members, TTL ms
var boundScript = script(`
local n = redis.call('ZCARD', KEYS[1])
if n <= tonumber(ARGV[1]) then return 0 end
redis.call('RENAME', KEYS[1], KEYS[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return n
`)

// Names lists the circuits with a state or counters, sorted.
func (s *Store) Names(ctx context.Context) ([]string, error) {
	names, err := s.listed(ctx)
	if err != nil {
		return nil, wrap("names", "", err)
	}
	slices.Sort(names)
	return names, nil
}

// gcScript removes the circuits and answers last written before a cutoff,
// keeping circuits tripped until reset (their state has no TTL) and those
// named after the cutoff (timed trips still in force, which Go judges), and
// returns the circuits removed, "", then the answers removed.
//
//	KEYS: names, answers; ARGV: prefix, cutoff (ms), names to keep...
var gcScript = script(`
local out = {}
local p = ARGV[1]
local keep = {}
for i = 3, #ARGV do keep[ARGV[i]] = true end
for _, n in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[2])) do
  local s = p .. 's:' .. n
  if not keep[n] and (redis.call('EXISTS', s) == 0 or redis.call('PTTL', s) ~= -1) then
    if redis.call('DEL', s, p .. 'c:' .. n, p .. 'e:' .. n) > 0 then table.insert(out, n) end
    redis.call('ZREM', KEYS[1], n)
  end
end
table.insert(out, '')
for _, k in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[2])) do
  if redis.call('DEL', p .. 'a:' .. k) > 0 then table.insert(out, k) end
  redis.call('ZREM', KEYS[2], k)
end
return out
`)

// GC removes circuits and answers not written for unusedFor (the TTL
// removes them too, by itself) and trims events older than eventsFor.
func (s *Store) GC(ctx context.Context, now time.Time, unusedFor, eventsFor time.Duration) (fusebox.GCReport, error) {
	var r fusebox.GCReport
	cutoff := strconv.FormatInt(now.Add(-unusedFor).UnixMilli(), 10)
	args := []any{s.prefix, cutoff}
	if _, err := s.listed(ctx); err != nil { // the list of names within its bound
		return r, wrap("gc", "", err)
	}
	var old []string
	err := s.mended(ctx, "", []typedKey{{s.namesKey(), typeZSet}, {s.answersKey(), typeZSet}}, func() (err error) {
		bctx, cancel := s.budget(ctx)
		defer cancel()
		old, err = s.c.ZRangeByScore(bctx, s.namesKey(), &goredis.ZRangeBy{Min: "-inf", Max: "(" + cutoff}).Result()
		var n int64
		if err == nil { // the list of answers within its bound
			k := s.answersKey()
			n, err = boundScript().Run(bctx, s.c, []string{k, s.asideName(k)}, maxListed, ttlArg(s.ttl)).Int64()
			if n > 0 {
				s.logDamaged("", k, fmt.Errorf("it lists %d answers, more than the %d a store lists", n, maxListed))
			}
		}
		return err
	})
	if err != nil {
		return r, wrap("gc", "", err)
	}
	for _, n := range old { // a trip still in force is kept, however long unused
		if _, st, err := s.read(ctx, n); err == nil && st.TripInForce(now) {
			args = append(args, n)
		}
	}
	bctx, cancel := s.budget(ctx)
	removed, err := gcScript().Run(bctx, s.c, []string{s.namesKey(), s.answersKey()}, args...).StringSlice()
	cancel()
	if err != nil {
		return r, wrap("gc", "", err)
	}
	i := slices.Index(removed, "")
	r.Circuits, r.Answers = removed[:i], removed[i+1:]
	slices.Sort(r.Circuits)
	slices.Sort(r.Answers)

	names, err := s.listed(ctx)
	if err != nil {
		return r, wrap("gc", "", err)
	}
	streams, err := s.streams(ctx, names)
	if err != nil {
		return r, wrap("gc", "", err)
	}
	eventsCutoff := now.Add(-eventsFor)
	for k, entries := range streams {
		_, older := decodeEvents(entries, eventsCutoff)
		if len(older) == 0 {
			continue
		}
		var n int64
		err := s.mended(ctx, names[k], []typedKey{{s.eventsKey(names[k]), typeStream}}, func() (err error) {
			bctx, cancel := s.budget(ctx)
			defer cancel()
			n, err = s.c.XDel(bctx, s.eventsKey(names[k]), older...).Result()
			return err
		})
		if err != nil {
			return r, wrap("gc", names[k], err)
		}
		r.Events += int(n)
	}
	return r, nil
}
