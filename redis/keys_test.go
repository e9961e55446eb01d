package redis_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/redistest"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/redis"
)

// sharedKey is one key of the shared store, the type fusebox gives it, and
// the calls that read it (each must succeed over a damaged one).
type sharedKey struct {
	name, key, typ string
	circuit        string // the circuit the ERROR names, "" for a key of none
	use            func(t *testing.T, s *redis.Store) error
}

func sharedKeys() []sharedKey {
	fail := func(s *redis.Store) error {
		return second(s.Update(ctx, "api", func(st *breaker.State) ([]breaker.Event, bool) {
			st.ConsecutiveFailures++
			return []breaker.Event{{Time: time.Now(), Circuit: "api", Kind: breaker.EventFailure}}, true
		}))
	}
	spend := func(s *redis.Store) error {
		b := fusebox.RetryBudget{Percent: 0.2, Min: 1, Window: 10 * time.Second}
		if err := second(s.SpendBudget(ctx, "api", b, time.Now(), false)); err != nil {
			return err
		}
		return second(s.SpendBudget(ctx, "api", b, time.Now(), true))
	}
	all := func(t *testing.T, calls ...func() error) error {
		for _, c := range calls {
			if err := c(); err != nil {
				return err
			}
		}
		return nil
	}
	return []sharedKey{
		{"epoch", "dk:epoch", "hash", "", func(t *testing.T, s *redis.Store) error {
			return all(t,
				func() error { return second(s.Load(ctx, "api")) },
				func() error { return fail(s) },
				func() error {
					id, err := s.EnsureEpoch(ctx)
					if err == nil && id == "" {
						t.Error("EnsureEpoch gave no id")
					}
					if got, _, _ := s.Epoch(); got != id {
						t.Errorf("Epoch = %q, want the new one %q", got, id)
					}
					return err
				})
		}},
		{"budget's first attempts", "dk:bf:api", "zset", "api", func(t *testing.T, s *redis.Store) error { return spend(s) }},
		{"budget's retries", "dk:br:api", "zset", "api", func(t *testing.T, s *redis.Store) error { return spend(s) }},
		{"counters", "dk:c:api", "hash", "api", func(t *testing.T, s *redis.Store) error {
			return all(t,
				func() error { return s.Count(ctx, "api", fusebox.Counts{Successes: 1}) },
				func() error { return second(s.Counts(ctx, "api")) })
		}},
		{"events", "dk:e:api", "stream", "api", func(t *testing.T, s *redis.Store) error {
			return all(t,
				func() error { return second(s.Events(ctx, "api", time.Time{})) },
				func() error { return fail(s) },
				func() error { return second(s.AllEvents(ctx, time.Time{})) })
		}},
		{"state", "dk:s:api", "hash", "api", func(t *testing.T, s *redis.Store) error {
			return all(t, func() error { return second(s.Load(ctx, "api")) }, func() error { return fail(s) })
		}},
		{"names", "dk:names", "zset", "", func(t *testing.T, s *redis.Store) error {
			return all(t,
				func() error { return second(s.Names(ctx)) },
				func() error { return fail(s) },
				func() error { return second(s.AllEvents(ctx, time.Time{})) })
		}},
		{"an answer", "dk:a:weather", "string", "", func(t *testing.T, s *redis.Store) error {
			return all(t,
				func() error { _, _, err := s.LoadAnswer(ctx, "weather"); return err },
				func() error { return s.SaveAnswer(ctx, "weather", answers.Answer{Status: 200}) })
		}},
		{"the answers' list", "dk:answers", "zset", "", func(t *testing.T, s *redis.Store) error {
			return all(t,
				func() error { return s.SaveAnswer(ctx, "weather", answers.Answer{Status: 200}) },
				func() error { return second(s.GC(ctx, time.Now(), time.Hour, time.Hour)) })
		}},
		{"an answer's lock", "dk:x:weather", "string", "", func(t *testing.T, s *redis.Store) error {
			return s.Exclusive(ctx, "weather", func() error { return nil })
		}},
	}
}

// wrongTypes plant a key of each type, K standing for the key.
var wrongTypes = []struct{ typ, plant string }{
	{"string", `redis.call('SET', KEYS[1], 'written by someone else')`},
	{"list", `redis.call('RPUSH', KEYS[1], 'x')`},
	{"hash", `redis.call('HSET', KEYS[1], 'x', 'y')`},
	{"set", `redis.call('SADD', KEYS[1], 'x')`},
	{"zset", `redis.call('ZADD', KEYS[1], 1, 'x')`},
	{"stream", `redis.call('XADD', KEYS[1], '*', 'x', 'y')`},
}

// Any client that writes a key of the shared store with a type fusebox
// never gives it (the epoch, a budget, the counters, the events, an answer,
// the lists, a lock) damages that key only: every call that reads it works,
// the key is moved aside to PREFIX damaged:KEY with a TTL and one ERROR,
// and another circuit's trip holds. Before, a SET over fusebox:epoch made
// every call of every host fail (and run without circuit protection) until
// someone deleted the key.
func TestEveryKeyOfTheWrongTypeIsThatKeysProblem(t *testing.T) {
	srv := redistest.Start(t)
	for _, k := range sharedKeys() {
		for _, w := range wrongTypes {
			if w.typ == k.typ {
				continue
			}
			t.Run(k.name+" as a "+w.typ, func(t *testing.T) {
				damaged(t, srv, k, w.plant, w.typ)
			})
		}
	}
}

// Keys of the right type holding what fusebox never writes, or more than
// it ever does: moved aside unread the same way (the counters, a state,
// the events and an answer past their bounds: bounds_test.go).
func TestEverySharedKeyPastItsBoundIsThatKeysProblem(t *testing.T) {
	srv := redistest.Start(t)
	keys := map[string]sharedKey{}
	for _, k := range sharedKeys() {
		keys[k.key] = k
	}
	for _, c := range []struct{ name, key, plant string }{
		{"an epoch id of 1 MB", "dk:epoch", `redis.call('HSET', KEYS[1], 'id', string.rep('a', 1000000))`},
		{"an epoch time of 1 MB", "dk:epoch", `redis.call('HSET', KEYS[1], 'id', 'ab12', 'changed', string.rep('9', 1000000))`},
		{"an epoch time that is not a number", "dk:epoch", `redis.call('HSET', KEYS[1], 'id', 'ab12', 'changed', 'soon')`},
		{"an empty epoch time", "dk:epoch", `redis.call('HSET', KEYS[1], 'id', 'ab12', 'changed', '')`},
		{"an epoch id with a space", "dk:epoch", `redis.call('HSET', KEYS[1], 'id', 'ab12 9', 'changed', '1')`},
		{"a budget of 1.1 million first attempts", "dk:bf:api", `
for i = 1, 1100000, 1000 do
  local args = {}
  for j = i, i + 999 do table.insert(args, 1e18) table.insert(args, j) end
  redis.call('ZADD', KEYS[1], unpack(args))
end`},
		{"a budget of 1.1 million retries", "dk:br:api", `
for i = 1, 1100000, 1000 do
  local args = {}
  for j = i, i + 999 do table.insert(args, 1) table.insert(args, j) end
  redis.call('ZADD', KEYS[1], unpack(args))
end`},
		{"a list of 100,001 circuit names", "dk:names", `
for i = 1, 100001, 1000 do
  local args = {}
  for j = i, i + 999 do table.insert(args, j) table.insert(args, 'circuit-' .. j) end
  redis.call('ZADD', KEYS[1], unpack(args))
end`},
		{"a list of 100,001 answers", "dk:answers", `
for i = 1, 100001, 1000 do
  local args = {}
  for j = i, i + 999 do table.insert(args, j) table.insert(args, 'answer-' .. j) end
  redis.call('ZADD', KEYS[1], unpack(args))
end`},
		{"a lock with no lease", "dk:x:weather", `redis.call('SET', KEYS[1], 'held for ever')`},
		{"a lock for ten years", "dk:x:weather", `redis.call('SET', KEYS[1], 'held', 'PX', 315360000000)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := keys[c.key]
			damaged(t, srv, k, c.plant, k.typ)
		})
	}
}

// damaged plants a damaged key on a flushed srv beside a tripped circuit,
// and checks that every call reading it works, that Redis sent little, and
// that the key is moved aside, as it was, with a TTL and one ERROR.
func damaged(t *testing.T, srv *redistest.Server, k sharedKey, script, typ string) {
	t.Helper()
	srv.Do("FLUSHALL")
	var log testenv.Buffer
	s := open(t, srv, redis.WithPrefix("dk:"), redis.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	defer s.Close()
	if _, err := s.Update(ctx, "nas", func(st *breaker.State) ([]breaker.Event, bool) {
		return st.Trip(breaker.Instant{Wall: time.Now()}, 0, ""), true
	}); err != nil {
		t.Fatal(err)
	}
	plant(t, srv, "redis.call('DEL', KEYS[1])\n"+script, []string{k.key})
	before := sent(t, srv)
	if err := k.use(t, s); err != nil {
		t.Fatalf("a call over the damaged %s: %v", k.key, err)
	}
	if n := sent(t, srv) - before; n > little {
		t.Errorf("Redis sent %d bytes, want at most %d: the damaged value was read", n, little)
	}
	aside := "dk:damaged:" + strings.TrimPrefix(k.key, "dk:")
	if got := srv.Do("TYPE", aside); got != "+"+typ {
		t.Errorf("TYPE %s = %s, want +%s: the damaged key kept aside as it was", aside, got, typ)
	}
	if ttl := srv.Do("PTTL", aside); ttl == ":-1" || ttl == ":-2" {
		t.Errorf("PTTL %s = %s, want a TTL", aside, ttl)
	}
	if n := strings.Count(log.String(), "level=ERROR"); n != 1 || !strings.Contains(log.String(), " redis="+k.key+" ") {
		t.Errorf("%d ERRORs, want 1 naming %s:\n%s", n, k.key, log.String())
	}
	if k.circuit != "" && !strings.Contains(log.String(), "circuit="+k.circuit) {
		t.Errorf("the ERROR does not name the circuit %s:\n%s", k.circuit, log.String())
	}
	// Used again, the key is sound: no second ERROR.
	if err := k.use(t, s); err != nil {
		t.Errorf("a second call: %v", err)
	}
	if n := strings.Count(log.String(), "level=ERROR"); n != 1 {
		t.Errorf("%d ERRORs after a second call, want still 1:\n%s", n, log.String())
	}
	if st, err := s.Load(ctx, "nas"); err != nil || st.Phase != breaker.ForcedOpen {
		t.Errorf("the other circuit: %+v, %v; want its trip kept", st.Phase, err)
	}
}

// Names in the list longer than a circuit's name may be (20 of 1 MB, each
// with a state key, so that they look listed) are no circuit's: dropped
// unread, and never sent.
func TestNamesLongerThanANameAreDroppedUnread(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, redis.WithPrefix("ln:"))
	defer s.Close()
	if err := s.Count(ctx, "api", fusebox.Counts{Successes: 1}); err != nil {
		t.Fatal(err)
	}
	plant(t, srv, `
for i = 1, 20 do
  local n = string.rep('n', 1000000) .. i
  redis.call('ZADD', KEYS[1], i, n)
  redis.call('HSET', 'ln:s:' .. n, 'v', '1')
end`, []string{"ln:names"})
	before := sent(t, srv)
	names, err := s.Names(ctx)
	if err != nil || len(names) != 1 || names[0] != "api" {
		t.Errorf("Names = %.3q, %v; want [api]", names, err)
	}
	if n := sent(t, srv) - before; n > little {
		t.Errorf("Redis sent %d bytes, want at most %d: the long names were sent", n, little)
	}
	if got := srv.Do("ZCARD", "ln:names"); got != ":1" {
		t.Errorf("ZCARD after = %s, want the long names dropped", got)
	}
}

// A write over a damaged key of its circuit is not half made: the state
// is not stored before the events key is found of the wrong type, so fn,
// run again after the key is moved aside, counts one failure, not two.
func TestAWriteOverADamagedKeyCountsOnce(t *testing.T) {
	srv := redistest.Start(t)
	for _, key := range []string{"hw:e:api", "hw:names", "hw:c:api"} {
		srv.Do("FLUSHALL")
		s := open(t, srv, redis.WithPrefix("hw:"))
		srv.Do("SET", key, "written by someone else")
		st, err := s.Update(ctx, "api", func(st *breaker.State) ([]breaker.Event, bool) {
			st.ConsecutiveFailures++
			return []breaker.Event{{Time: time.Now(), Circuit: "api", Kind: breaker.EventFailure}}, true
		})
		if err != nil || st.ConsecutiveFailures != 1 {
			t.Errorf("%s damaged: Update = %d failures, %v; want 1", key, st.ConsecutiveFailures, err)
		}
		if got, err := s.Load(ctx, "api"); err != nil || got.ConsecutiveFailures != 1 {
			t.Errorf("%s damaged: stored %d failures, %v; want 1", key, got.ConsecutiveFailures, err)
		}
		if evs, err := s.Events(ctx, "api", time.Time{}); err != nil || len(evs) != 1 {
			t.Errorf("%s damaged: %d events, %v; want the one failure", key, len(evs), err)
		}
		s.Close()
	}
}

// Count over a damaged list of names counts once, as Update does.
func TestACountOverADamagedListCountsOnce(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, redis.WithPrefix("hc:"))
	defer s.Close()
	srv.Do("SET", "hc:names", "written by someone else")
	if err := s.Count(ctx, "api", fusebox.Counts{Successes: 1}); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Counts(ctx, "api"); err != nil || c.Successes != 1 {
		t.Errorf("Counts = %+v, %v; want the one success", c, err)
	}
}
