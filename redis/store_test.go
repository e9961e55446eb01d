package redis_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/redistest"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/redact"
	"github.com/fusebox-hq/fusebox/redis"
	"github.com/fusebox-hq/fusebox/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testenv.Exit)) }

var ctx = context.Background()

// open returns a store on srv with a prefix of its own, so that subtests
// sharing one server start empty.
var prefixes atomic.Int64

func open(t *testing.T, srv *redistest.Server, opts ...redis.Option) *redis.Store {
	t.Helper()
	opts = append([]redis.Option{redis.WithPrefix("t" + strconv.FormatInt(prefixes.Add(1), 10) + ":"),
		// Generous: the machine is shared and slow; the budget is tested in statestore.
		redis.WithTimeouts(2*time.Second, 2*time.Second)}, opts...)
	s, err := redis.Open(srv.URL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStore(t *testing.T) {
	srv := redistest.Start(t)
	storetest.Run(t, func(t *testing.T) fusebox.Admin { return open(t, srv) })
}

func TestConflictsAreRetriedAndCounted(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, srv, redis.WithPrefix("shared:")), open(t, srv, redis.WithPrefix("shared:"))
	defer a.Close()
	defer b.Close()
	// b writes between a's read and a's write: a's first fn call is lost
	// and fn runs again on b's state.
	calls := 0
	st, err := a.Update(ctx, "api", func(st *breaker.State) ([]breaker.Event, bool) {
		calls++
		if calls == 1 {
			if _, err := b.Update(ctx, "api", func(st *breaker.State) ([]breaker.Event, bool) {
				st.ConsecutiveFailures = 10
				return nil, true
			}); err != nil {
				t.Fatal(err)
			}
		}
		st.ConsecutiveFailures++
		return nil, true
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 || st.ConsecutiveFailures != 11 || a.Retries() != 1 {
		t.Errorf("fn ran %d times, failures %d, retries %d; want 2, 11 (b's 10 + 1), 1", calls, st.ConsecutiveFailures, a.Retries())
	}
}

func TestContentionOverManyClients(t *testing.T) {
	srv := redistest.Start(t)
	const clients, each = 8, 25
	var wg sync.WaitGroup
	var retries atomic.Uint64
	for range clients {
		s := open(t, srv, redis.WithPrefix("busy:"))
		wg.Go(func() {
			defer s.Close()
			for range each {
				if _, err := s.Update(ctx, "api", func(st *breaker.State) ([]breaker.Event, bool) {
					st.ConsecutiveFailures++
					return nil, true
				}); err != nil {
					t.Error(err)
				}
			}
			retries.Add(s.Retries())
		})
	}
	wg.Wait()
	s := open(t, srv, redis.WithPrefix("busy:"))
	defer s.Close()
	st, err := s.Load(ctx, "api")
	if err != nil || st.ConsecutiveFailures != clients*each {
		t.Fatalf("failures = %d, %v; want %d", st.ConsecutiveFailures, err, clients*each)
	}
	t.Logf("%d updates from %d clients: %d retries", clients*each, clients, retries.Load())
}

func TestKeysExpireButATripUntilResetDoesNot(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, redis.WithPrefix("ttl:"), redis.WithTTL(time.Hour))
	defer s.Close()
	now := breaker.Instant{Wall: time.Now()}
	if _, err := s.Update(ctx, "api", func(st *breaker.State) ([]breaker.Event, bool) {
		return st.Trip(now, time.Minute, ""), true
	}); err != nil {
		t.Fatal(err)
	}
	// A timed trip's key lives for the trip and then the unused period.
	if ttl, _ := strconv.Atoi(srv.Do("PTTL", "ttl:s:api")[1:]); ttl <= int(time.Hour/time.Millisecond) || ttl > int((time.Hour+time.Minute)/time.Millisecond) {
		t.Errorf("PTTL of a one-minute trip = %d ms, want an hour and up to a minute", ttl)
	}
	// A process that knows a shorter TTL (or none) counts
	// a skip: the counters still live as long as the state.
	short := open(t, srv, redis.WithPrefix("ttl:"), redis.WithTTL(time.Minute))
	defer short.Close()
	if err := short.Count(ctx, "api", fusebox.Counts{Skips: 1}); err != nil {
		t.Fatal(err)
	}
	if ttl, _ := strconv.Atoi(srv.Do("PTTL", "ttl:c:api")[1:]); ttl <= int(time.Minute/time.Millisecond) {
		t.Errorf("PTTL of the counters = %d ms after a count with a 1m TTL; want the state's, up to an hour", ttl)
	}
	if _, err := s.Update(ctx, "nas", func(st *breaker.State) ([]breaker.Event, bool) {
		return st.Trip(now, 0, ""), true
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Count(ctx, "nas", fusebox.Counts{Skips: 1}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ttl:s:nas", "ttl:e:nas", "ttl:c:nas"} {
		if got := srv.Do("PTTL", k); got != ":-1" {
			t.Errorf("PTTL %s = %s for a trip until reset, want :-1 (no expiry)", k, got)
		}
	}
}

func TestEventsAreCapped(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, redis.WithMaxEvents(10))
	defer s.Close()
	for i := range 500 {
		if _, err := s.Update(ctx, "api", func(st *breaker.State) ([]breaker.Event, bool) {
			return []breaker.Event{{Time: time.Now(), Circuit: "api", Kind: breaker.EventFailure, Attempt: i}}, true
		}); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := s.Events(ctx, "api", time.Time{})
	if err != nil || len(evs) >= 500 || len(evs) < 10 || evs[len(evs)-1].Attempt != 499 {
		t.Errorf("%d events kept of 500 with a cap of 10 (%v); want about 10, the latest last", len(evs), err)
	}
}

func TestExclusiveLockOutlivesNoHolder(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, redis.WithPrefix("lease:"), redis.WithLockLease(50*time.Millisecond), redis.WithLockTimeout(time.Minute))
	defer s.Close()
	// A holder that died: its lock is there, with a lease, and no one frees it.
	srv.Do("SET", "lease:x:weather", "dead-holder", "PX", "50")
	ran := false
	if err := s.Exclusive(ctx, "weather", func() error { ran = true; return nil }); err != nil || !ran {
		t.Errorf("Exclusive after a dead holder = %v, ran %v; want fn run once the lease ended", err, ran)
	}
	if got := srv.Do("EXISTS", "lease:x:weather"); got != ":0" {
		t.Errorf("lock left behind after release: EXISTS = %s", got)
	}
}

func TestOpenHidesThePassword(t *testing.T) {
	_, err := redis.Open("redis://user:hunter2@127.0.0.1:6379/notadb")
	if err == nil {
		t.Fatal("a bad database number opened")
	}
	if got := err.Error(); contains(got, "hunter2") {
		t.Errorf("error shows the password: %s", got)
	}
	_, err = redis.Open("redis://user:hunter2@[::1")
	if err == nil || contains(err.Error(), "hunter2") {
		t.Errorf("bad URL: %v; want an error without the password", err)
	}
	if p := redis.Password("rediss://u:s3cr%2Ft@h:6380/1"); p != "s3cr/t" {
		t.Errorf("Password = %q, want s3cr/t", p)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestADamagedStateIsSetAsideAndReplaced(t *testing.T) {
	srv := redistest.Start(t)
	var log strings.Builder
	s := open(t, srv, redis.WithPrefix("dmg:"), redis.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	defer s.Close()
	srv.Do("HSET", "dmg:s:api", "v", "3", "state", "{not json")
	st, err := s.Load(ctx, "api")
	if err != nil || st.Name != "api" || st.Phase != "" {
		t.Fatalf("Load of a damaged record = %+v, %v; want a fresh state", st, err)
	}
	if !strings.Contains(log.String(), "level=ERROR msg=\"damaged Redis key moved aside") || srv.Do("EXISTS", "dmg:damaged:s:api") != ":1" {
		t.Errorf("no ERROR or no copy moved aside:\n%s", log.String())
	}
	if _, err := s.Update(ctx, "api", func(st *breaker.State) ([]breaker.Event, bool) {
		st.ConsecutiveFailures = 1
		return nil, true
	}); err != nil {
		t.Fatalf("Update over a damaged record: %v", err)
	}
	if st, err := s.Load(ctx, "api"); err != nil || st.ConsecutiveFailures != 1 {
		t.Errorf("after Update: %+v, %v; want the damaged record replaced", st, err)
	}
}

// A key of the wrong type for one circuit (a person's SET over its hash) is
// that circuit's problem alone: moved aside with a TTL, one ERROR naming the
// key and the circuit, and the circuit starts afresh; every other circuit
// and every method goes on.
func TestAKeyOfTheWrongTypeIsMovedAsideWithOneError(t *testing.T) {
	srv := redistest.Start(t)
	for _, k := range []struct{ name, key string }{
		{"state", "wt:s:api"}, {"counts", "wt:c:api"}, {"events", "wt:e:api"}, {"names", "wt:names"},
	} {
		t.Run(k.name, func(t *testing.T) {
			var log testenv.Buffer
			srv.Do("FLUSHALL")
			// Through the redactor every front end logs with: the line names
			// the key, not REDACTED.
			logger := slog.New(redact.New("a-secret").Handler(slog.NewTextHandler(&log, nil)))
			s := open(t, srv, redis.WithPrefix("wt:"), redis.WithLogger(logger))
			defer s.Close()
			if _, err := s.Update(ctx, "nas", func(st *breaker.State) ([]breaker.Event, bool) {
				return st.Trip(breaker.Instant{Wall: time.Now()}, 0, ""), true
			}); err != nil {
				t.Fatal(err)
			}
			srv.Do("SET", k.key, "written by someone else")
			// Every method on the damaged circuit works, starting afresh.
			if _, err := s.Update(ctx, "api", func(st *breaker.State) ([]breaker.Event, bool) {
				st.ConsecutiveFailures++
				return []breaker.Event{{Time: time.Now(), Circuit: "api", Kind: breaker.EventFailure}}, true
			}); err != nil {
				t.Fatalf("Update: %v", err)
			}
			if err := s.Count(ctx, "api", fusebox.Counts{Failures: 1}); err != nil {
				t.Fatalf("Count: %v", err)
			}
			for what, err := range map[string]error{
				"Load":      second(s.Load(ctx, "api")),
				"Counts":    second(s.Counts(ctx, "api")),
				"Events":    second(s.Events(ctx, "api", time.Time{})),
				"AllEvents": second(s.AllEvents(ctx, time.Time{})),
				"Names":     second(s.Names(ctx)),
				"GC":        second(s.GC(ctx, time.Now(), time.Hour, time.Hour)),
			} {
				if err != nil {
					t.Errorf("%s after %s was damaged: %v", what, k.key, err)
				}
			}
			if got := srv.Do("TYPE", "wt:damaged:"+strings.TrimPrefix(k.key, "wt:")); got != "+string" {
				t.Errorf("TYPE of the key moved aside = %s, want +string (the damaged value kept)", got)
			}
			if ttl := srv.Do("PTTL", "wt:damaged:"+strings.TrimPrefix(k.key, "wt:")); ttl == ":-1" || ttl == ":-2" {
				t.Errorf("PTTL of the key moved aside = %s, want a TTL", ttl)
			}
			if n := strings.Count(log.String(), "level=ERROR"); n != 1 || !strings.Contains(log.String(), " redis="+k.key+" ") {
				t.Errorf("%d ERRORs, want 1 naming %s:\n%s", n, k.key, log.String())
			}
			if k.name != "names" && !strings.Contains(log.String(), "circuit=api") {
				t.Errorf("the ERROR does not name the circuit:\n%s", log.String())
			}
			// The other circuit's trip is untouched.
			if st, err := s.Load(ctx, "nas"); err != nil || st.Phase != breaker.ForcedOpen {
				t.Errorf("the other circuit after %s was damaged: %+v, %v; want its trip kept", k.key, st.Phase, err)
			}
		})
	}
}

func second[T any](_ T, err error) error { return err }

func TestAnsweredTellsARecordsErrorsFromAnOutage(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, redis.WithPrefix("ans:"))
	defer s.Close()
	srv.Do("SET", "ans:plain", "x")
	srv.Do("CONFIG", "SET", "requirepass", "sekrit")
	_, err := s.Load(ctx, "api")
	if err == nil || redis.Answered(err) {
		t.Errorf("Load refused for want of a password = %v; Answered = true, want an outage", err)
	}
	if redis.Answered(errors.New("dial tcp 127.0.0.1:1: connect: connection refused")) {
		t.Error("a refused connection counts as Redis answering")
	}
	if !redis.Answered(fmt.Errorf("redis update api: %w", redis.ErrConflict)) {
		t.Error("a conflict that outlasted the update timeout counts as an outage")
	}
}

// Peek is what explain reads: a damaged record is reported and left where
// it is, and nothing at all is written.
func TestPeekReportsDamageAndWritesNothing(t *testing.T) {
	srv := redistest.Start(t)
	var log strings.Builder
	s := open(t, srv, redis.WithPrefix("pk:"), redis.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	defer s.Close()
	for _, c := range []struct {
		name string
		set  []string
	}{
		{"a state that is not JSON", []string{"HSET", "pk:s:api", "v", "3", "state", "{not json"}},
		{"a state of another circuit", []string{"HSET", "pk:s:api", "v", "3", "state", `{"name":"other"}`}},
		{"a version longer than a number", []string{"HSET", "pk:s:api", "v", strings.Repeat("9", 30), "state", `{"name":"api"}`}},
		{"a state over 1 MiB", []string{"HSET", "pk:s:api", "v", "3", "state", strings.Repeat(" ", 2<<20)}},
		{"a key of the wrong type", []string{"SET", "pk:s:api", "hand-written"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv.Do("DEL", "pk:s:api")
			srv.Do(c.set...)
			typ := srv.Do("TYPE", "pk:s:api")
			writes := srv.Info("rdb_changes_since_last_save")
			st, _, err := s.Peek(ctx, "api")
			if !errors.Is(err, fusebox.ErrDamaged) || !strings.Contains(err.Error(), "pk:s:api") || st.Name != "api" || st.Phase != "" {
				t.Fatalf("Peek = %+v, %v; want a fresh state and ErrDamaged naming the key", st, err)
			}
			if got := srv.Do("TYPE", "pk:s:api"); got != typ || srv.Do("EXISTS", "pk:damaged:s:api") != ":0" {
				t.Errorf("after Peek the key is a %s, want it in place and nothing moved aside", got)
			}
			if got := srv.Info("rdb_changes_since_last_save"); got != writes {
				t.Errorf("Redis counts writes %s before Peek and %s after, want none", writes, got)
			}
		})
	}
	if log.Len() != 0 {
		t.Errorf("Peek logged:\n%s", log.String())
	}
}

// Peek's counts and PeekNames are what explain's check of a name reads:
// damaged counters and a damaged list of names are reported and left where
// they are, a listed name with no key left is skipped and not dropped, and
// nothing at all is written.
func TestPeekCountsAndNamesReportDamageAndWriteNothing(t *testing.T) {
	srv := redistest.Start(t)
	var log strings.Builder
	s := open(t, srv, redis.WithPrefix("pk:"), redis.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	defer s.Close()
	peekCounts := func() error {
		_, c, err := s.Peek(ctx, "api")
		if c != (fusebox.Counts{}) {
			t.Errorf("Peek of damaged counters counts %+v, want zero", c)
		}
		return err
	}
	peekNames := func() error {
		n, err := s.PeekNames(ctx)
		if len(n) != 0 {
			t.Errorf("PeekNames of a damaged list = %q, want none", n)
		}
		return err
	}
	for _, c := range []struct {
		name, key string
		set       []string
		peek      func() error
	}{
		{"counters of the wrong type", "pk:c:api", []string{"SET", "pk:c:api", "hand-written"}, peekCounts},
		{"a counter longer than a number", "pk:c:api", []string{"HSET", "pk:c:api", "failures", strings.Repeat("9", 30)}, peekCounts},
		{"names of the wrong type", "pk:names", []string{"SET", "pk:names", "hand-written"}, peekNames},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv.Do("DEL", c.key)
			srv.Do(c.set...)
			typ := srv.Do("TYPE", c.key)
			writes := srv.Info("rdb_changes_since_last_save")
			if err := c.peek(); !errors.Is(err, fusebox.ErrDamaged) || !strings.Contains(err.Error(), c.key) {
				t.Fatalf("peek: %v; want ErrDamaged naming %s", err, c.key)
			}
			aside := "pk:damaged:" + strings.TrimPrefix(c.key, "pk:")
			if got := srv.Do("TYPE", c.key); got != typ || srv.Do("EXISTS", aside) != ":0" {
				t.Errorf("after the peek the key is a %s, want it in place and nothing moved aside", got)
			}
			if got := srv.Info("rdb_changes_since_last_save"); got != writes {
				t.Errorf("Redis counts writes %s before the peek and %s after, want none", writes, got)
			}
			srv.Do("DEL", c.key)
		})
	}
	srv.Do("ZADD", "pk:names", "1", "gone")
	writes := srv.Info("rdb_changes_since_last_save")
	if n, err := s.PeekNames(ctx); err != nil || len(n) != 0 {
		t.Errorf("PeekNames with only a name whose keys are gone = %q, %v; want none", n, err)
	}
	if got := srv.Do("ZCARD", "pk:names"); got != ":1" || srv.Info("rdb_changes_since_last_save") != writes {
		t.Errorf("after PeekNames the list holds %s names, want the 1 left as it was", got)
	}
	if log.Len() != 0 {
		t.Errorf("the peeks logged:\n%s", log.String())
	}
}
