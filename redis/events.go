package redis

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fusebox-hq/fusebox"
)

// Events reads the circuit's stream. Event times are the callers' and need
// not follow the stream's own IDs, so since is applied here, not by XRANGE.
func (s *Store) Events(ctx context.Context, name string, since time.Time) ([]fusebox.Event, error) {
	if err := fusebox.ValidateName(name); err != nil {
		return nil, err
	}
	var msgs []goredis.XMessage
	err := s.mended(ctx, name, []typedKey{{s.eventsKey(name), typeStream}}, func() (err error) {
		bctx, cancel := s.budget(ctx)
		defer cancel()
		msgs, err = s.c.XRange(bctx, s.eventsKey(name), "-", "+").Result()
		return err
	})
	if err != nil {
		return nil, wrap("events", name, err)
	}
	out, _ := decodeEvents(msgs, since)
	return out, nil
}

// decodeEvents returns the events at or after since, and the stream IDs of
// those before it. An entry that does not decode is skipped.
func decodeEvents(msgs []goredis.XMessage, since time.Time) (keep []fusebox.Event, older []string) {
	for _, m := range msgs {
		raw, _ := m.Values["e"].(string)
		var e fusebox.Event
		if json.Unmarshal([]byte(raw), &e) != nil {
			continue
		}
		if e.Time.Before(since) {
			older = append(older, m.ID)
			continue
		}
		keep = append(keep, e)
	}
	return keep, older
}

// AllEvents reads every listed circuit's stream in one pipeline.
func (s *Store) AllEvents(ctx context.Context, since time.Time) ([]fusebox.Event, error) {
	names, err := s.listed(ctx)
	if err != nil {
		return nil, wrap("all events", "", err)
	}
	streams, err := s.streams(ctx, names)
	if err != nil {
		return nil, wrap("all events", "", err)
	}
	var out []fusebox.Event
	for _, msgs := range streams {
		evs, _ := decodeEvents(msgs, since)
		out = append(out, evs...)
	}
	fusebox.SortEvents(out)
	return out, nil
}

func (s *Store) listed(ctx context.Context) (names []string, err error) {
	err = s.mended(ctx, "", []typedKey{{s.namesKey(), typeZSet}}, func() (err error) {
		bctx, cancel := s.budget(ctx)
		defer cancel()
		names, err = s.c.ZRange(bctx, s.namesKey(), 0, -1).Result()
		return err
	})
	return names, err
}

// streams reads the event streams of names in one pipeline. A stream
// whose key has the wrong type is moved aside and read as empty.
func (s *Store) streams(ctx context.Context, names []string) ([][]goredis.XMessage, error) {
	if len(names) == 0 {
		return nil, nil
	}
	bctx, cancel := s.budget(ctx)
	defer cancel()
	cmds := make([]*goredis.XMessageSliceCmd, len(names))
	_, err := s.c.Pipelined(bctx, func(p goredis.Pipeliner) error {
		for i, n := range names {
			cmds[i] = p.XRange(bctx, s.eventsKey(n), "-", "+")
		}
		return nil
	})
	out := make([][]goredis.XMessage, len(names))
	for i, c := range cmds {
		switch cerr := c.Err(); {
		case cerr == nil || cerr == goredis.Nil:
			out[i] = c.Val()
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

// namesScript lists the circuits that still have a state or counters and
// drops the names whose keys have expired, in one step, so that a circuit
// written meanwhile is never dropped.
//
//	KEYS: names; ARGV: prefix
var namesScript = script(`
local out = {}
for _, n in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if redis.call('EXISTS', ARGV[1] .. 's:' .. n, ARGV[1] .. 'c:' .. n) > 0 then
    table.insert(out, n)
  else
    redis.call('ZREM', KEYS[1], n)
  end
end
return out
`)

// Names lists the circuits with a state or counters, sorted.
func (s *Store) Names(ctx context.Context) ([]string, error) {
	var names []string
	err := s.mended(ctx, "", []typedKey{{s.namesKey(), typeZSet}}, func() (err error) {
		bctx, cancel := s.budget(ctx)
		defer cancel()
		names, err = namesScript().Run(bctx, s.c, []string{s.namesKey()}, s.prefix).StringSlice()
		return err
	})
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
	var old []string
	err := s.mended(ctx, "", []typedKey{{s.namesKey(), typeZSet}, {s.answersKey(), typeZSet}}, func() (err error) {
		bctx, cancel := s.budget(ctx)
		defer cancel()
		old, err = s.c.ZRangeByScore(bctx, s.namesKey(), &goredis.ZRangeBy{Min: "-inf", Max: "(" + cutoff}).Result()
		if err == nil {
			err = s.c.ZCard(bctx, s.answersKey()).Err() // the script reads it too
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
	for k, msgs := range streams {
		_, older := decodeEvents(msgs, eventsCutoff)
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
