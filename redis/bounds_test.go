package redis_test

import (
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/bounds"
	"github.com/fusebox-hq/fusebox/internal/redistest"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/redis"
)

// sent is how many bytes Redis has sent its clients so far.
func sent(t *testing.T, srv *redistest.Server) int64 {
	t.Helper()
	n, err := strconv.ParseInt(srv.Info("total_net_output_bytes"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// plant runs a Lua script on srv that writes what a test needs, with time
// to spare: writing 100 MB takes a while on a loaded machine.
func plant(t *testing.T, srv *redistest.Server, script string, keys []string, args ...any) {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), ReadTimeout: 5 * time.Minute})
	defer c.Close()
	if err := c.Eval(ctx, script, keys, args...).Err(); err != nil && err != goredis.Nil {
		t.Fatalf("plant: %v", err)
	}
}

// openBounded opens a store for a bounds test: what these tests measure is
// the bytes Redis sends, not how fast, so a command may take a minute (a
// guard for a wedged server): a Lua script over 100 MB takes seconds on a
// loaded machine, past open's 2s.
func openBounded(t *testing.T, srv *redistest.Server, opts ...redis.Option) *redis.Store {
	t.Helper()
	return open(t, srv, append([]redis.Option{redis.WithTimeouts(2*time.Second, time.Minute)}, opts...)...)
}

// little is what a read past a bound may cost in bytes sent by Redis: the
// replies that say so, and the INFO that measures them.
const little = 64 << 10

// The records another host (or anyone who reaches Redis) writes have the
// file store's bounds, checked in Redis before anything is sent: a value
// past its bound is damage, moved aside (or deleted) unread with one
// ERROR, and the circuit starts afresh.
func TestOversizedRecordsAreSetAsideUnread(t *testing.T) {
	srv := redistest.Start(t)
	for _, c := range []struct {
		name, key, aside string
		plant            string // a Lua script writing the oversized record
		read             func(*redis.Store) error
	}{
		{"a 4 MB state", "big:s:api", "big:damaged:s:api",
			`redis.call('HSET', KEYS[1], 'v', '3', 'state', string.rep('x', 4000000))`,
			func(s *redis.Store) error {
				st, err := s.Load(ctx, "api")
				if err == nil && (st.Name != "api" || st.Phase != "") {
					t.Errorf("Load = %+v, want a fresh state", st)
				}
				return err
			}},
		{"a version of 1 MB", "big:s:api", "big:damaged:s:api",
			`redis.call('HSET', KEYS[1], 'v', string.rep('9', 1000000), 'state', '{}')`,
			func(s *redis.Store) error { return second(s.Load(ctx, "api")) }},
		{"a counter of 1 MB", "big:c:api", "big:damaged:c:api",
			`redis.call('HSET', KEYS[1], 'successes', string.rep('1', 1000000))`,
			func(s *redis.Store) error {
				c, err := s.Counts(ctx, "api")
				if err == nil && c != (fusebox.Counts{}) {
					t.Errorf("Counts = %+v, want none", c)
				}
				return err
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv.Do("FLUSHALL")
			var log testenv.Buffer
			s := openBounded(t, srv, redis.WithPrefix("big:"), redis.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
			defer s.Close()
			plant(t, srv, c.plant, []string{c.key})
			before := sent(t, srv)
			if err := c.read(s); err != nil {
				t.Fatalf("read past the bound: %v", err)
			}
			if n := sent(t, srv) - before; n > little {
				t.Errorf("Redis sent %d bytes for the read, want at most %d: the oversized value was transferred", n, little)
			}
			if got := srv.Do("EXISTS", c.aside); got != ":1" {
				t.Errorf("EXISTS %s = %s, want the damaged record kept aside", c.aside, got)
			}
			if ttl := srv.Do("PTTL", c.aside); ttl == ":-1" || ttl == ":-2" {
				t.Errorf("PTTL %s = %s, want a TTL", c.aside, ttl)
			}
			if n := strings.Count(log.String(), "level=ERROR"); n != 1 || !strings.Contains(log.String(), "redis="+c.key) || !strings.Contains(log.String(), "circuit=api") {
				t.Errorf("%d ERRORs, want 1 naming %s and the circuit:\n%s", n, c.key, log.String())
			}
			// The circuit goes on, afresh.
			if _, err := s.Update(ctx, "api", func(st *breaker.State) ([]breaker.Event, bool) {
				st.ConsecutiveFailures = 1
				return nil, true
			}); err != nil {
				t.Fatalf("Update after: %v", err)
			}
			if err := s.Count(ctx, "api", fusebox.Counts{Successes: 1}); err != nil {
				t.Fatalf("Count after: %v", err)
			}
			if st, err := s.Load(ctx, "api"); err != nil || st.ConsecutiveFailures != 1 {
				t.Errorf("Load after = %+v, %v; want the new state", st, err)
			}
		})
	}
}

// A counter someone else made a string, or a huge one: Count, the one call
// a healthy run makes, moves the counters aside in the same step with one
// ERROR and counts afresh, instead of failing on every call.
func TestCountOverADamagedCounterStartsAfresh(t *testing.T) {
	srv := redistest.Start(t)
	for _, c := range []struct{ name, plant string }{
		{"not digits", `redis.call('HSET', KEYS[1], 'failures', 'many')`},
		{"1 MB of digits", `redis.call('HSET', KEYS[1], 'skips', string.rep('9', 1000000))`},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv.Do("FLUSHALL")
			var log testenv.Buffer
			s := openBounded(t, srv, redis.WithPrefix("cnt:"), redis.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
			defer s.Close()
			plant(t, srv, c.plant, []string{"cnt:c:api"})
			for range 2 {
				if err := s.Count(ctx, "api", fusebox.Counts{Successes: 1}); err != nil {
					t.Fatalf("Count over a damaged counter: %v", err)
				}
			}
			if got, err := s.Counts(ctx, "api"); err != nil || got.Successes != 2 || got.Failures != 0 || got.Skips != 0 {
				t.Errorf("Counts = %+v, %v; want the 2 successes counted afresh", got, err)
			}
			if n := strings.Count(log.String(), "level=ERROR"); n != 1 || !strings.Contains(log.String(), "redis=cnt:c:api") || srv.Do("EXISTS", "cnt:damaged:c:api") != ":1" {
				t.Errorf("%d ERRORs, want 1 naming the key, and the counters kept aside:\n%s", n, log.String())
			}
		})
	}
}

// 100 MB in a circuit's stream (events near the 64 KiB an event may be,
// some larger, some not events at all): Events and AllEvents, what history
// and a /metrics scrape read, get the newest events within 16 MiB, with
// reasons of at most 200 bytes; the oversized entries are deleted with
// one ERROR.
func TestEventsReadAreBounded(t *testing.T) {
	srv := redistest.Start(t)
	var log testenv.Buffer
	s := openBounded(t, srv, redis.WithPrefix("ev:"), redis.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	defer s.Close()
	if err := s.Count(ctx, "api", fusebox.Counts{Failures: 1}); err != nil { // lists the circuit
		t.Fatal(err)
	}
	const events = 1700 // of 61.5 KB each: 104 MB
	plant(t, srv, `
local ev = '{"time":"2026-01-01T00:00:00Z","circuit":"api","kind":"failure","reason":"' .. string.rep('r', 61440) .. '"}'
for i = 1, 3 do redis.call('XADD', KEYS[1], '*', 'e', string.rep('x', 1000000)) end
redis.call('XADD', KEYS[1], '*', 'x', 'no event here')
for i = 1, tonumber(ARGV[1]) do redis.call('XADD', KEYS[1], '*', 'e', ev) end
for i = 1, 2 do redis.call('XADD', KEYS[1], '*', 'e', string.rep('x', 1000000)) end
return 1`, []string{"ev:e:api"}, events)

	for _, read := range []struct {
		name string
		fn   func() ([]breaker.Event, error)
	}{
		{"Events", func() ([]breaker.Event, error) { return s.Events(ctx, "api", time.Time{}) }},
		{"AllEvents", func() ([]breaker.Event, error) { return s.AllEvents(ctx, time.Time{}) }},
	} {
		before := sent(t, srv)
		evs, err := read.fn()
		if err != nil {
			t.Fatalf("%s: %v", read.name, err)
		}
		n := sent(t, srv) - before
		t.Logf("%s of a 104 MB stream: %d events, %d bytes sent by Redis", read.name, len(evs), n)
		if n > bounds.MaxEventsRead+little {
			t.Errorf("%s: Redis sent %d bytes, want at most %d", read.name, n, bounds.MaxEventsRead+little)
		}
		if len(evs) == 0 || len(evs) > bounds.MaxEventsRead/61440 {
			t.Errorf("%s: %d events, want some and at most %d", read.name, len(evs), bounds.MaxEventsRead/61440)
		}
		for _, e := range evs {
			if len(e.Reason) > bounds.MaxReason || !strings.HasSuffix(e.Reason, "…") {
				t.Fatalf("%s: a reason of %d bytes (%.20q), want it cut to at most %d", read.name, len(e.Reason), e.Reason, bounds.MaxReason)
			}
		}
	}
	if n := strings.Count(log.String(), "level=ERROR"); n != 1 || !strings.Contains(log.String(), "redis=ev:e:api") {
		t.Errorf("%d ERRORs, want 1 for the stream's oversized entries:\n%s", n, log.String())
	}
	if got, want := srv.Do("XLEN", "ev:e:api"), ":"+strconv.Itoa(events+3+1); got != want {
		t.Errorf("XLEN after = %s, want %s: the two newest oversized entries deleted, the rest kept unread", got, want)
	}
}

// A stored answer larger than an answer may be is dropped unread, as a
// missing answer.
func TestAnOversizedAnswerIsDroppedUnread(t *testing.T) {
	srv := redistest.Start(t)
	var log testenv.Buffer
	s := openBounded(t, srv, redis.WithPrefix("ans:"), redis.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	defer s.Close()
	if err := s.SaveAnswer(ctx, "weather", answers.Answer{}); err != nil {
		t.Fatal(err)
	}
	srv.Do("SETRANGE", "ans:a:weather", strconv.Itoa(bounds.MaxAnswerSize), "x")
	before := sent(t, srv)
	if _, ok, err := s.LoadAnswer(ctx, "weather"); ok || err != nil {
		t.Fatalf("LoadAnswer of 64 MiB + 1 = %v, %v; want missing", ok, err)
	}
	if n := sent(t, srv) - before; n > little {
		t.Errorf("Redis sent %d bytes, want at most %d", n, little)
	}
	if got := srv.Do("EXISTS", "ans:a:weather"); got != ":0" || !strings.Contains(log.String(), "more than the") {
		t.Errorf("EXISTS = %s, want it deleted with a WARN:\n%s", got, log.String())
	}
}
