// Package storetest is the contract suite every fusebox.Admin passes. A
// Store's tests call Run with a func that opens a fresh, empty store:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) fusebox.Admin { return mem.New() })
//	}
//
// Stores judge a circuit's age each their own way (mem by State.UpdatedAt, file
// by mtime), so the suite sets UpdatedAt to now whenever it stores a state,
// as the breaker state machine does.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/budgetlog"
	"github.com/fusebox-hq/fusebox/internal/retention"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// Run runs the contract suite, each subtest on a store of its own from open.
// Run closes the stores.
func Run(t *testing.T, open func(t *testing.T) fusebox.Admin) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := open(t)
			c.test(t, s)
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

var cases = []struct {
	name string
	test func(*testing.T, fusebox.Admin)
}{
	{"an unknown circuit loads as a zero state with its name", testLoadUnknown},
	{"update stores the state fn changed and returns it", testUpdateStores},
	{"peek reads what load, counts and names read and stores nothing", testPeek},
	{"every field of a state survives the store", testRoundTrip},
	{"update stores nothing when fn reports no change", testUpdateUnchanged},
	{"update hands fn the stored state", testUpdateSeesStored},
	{"events are appended in order and read back from since", testEvents},
	{"100 concurrent updates lose no increment", testConcurrentUpdates},
	{"counts add up per circuit over concurrent adds, without touching the state", testCounts},
	{"names lists the circuits with state or counts, sorted", testNames},
	{"all events of every circuit come back by time", testAllEvents},
	{"scanning events hands them over one at a time from since, and stops when told", testScanEvents},
	{"an answer round-trips, non-UTF-8 body included", testAnswerRoundTrip},
	{"a missing answer loads with ok false", testAnswerMissing},
	{"a saved answer replaces the previous one", testAnswerReplaced},
	{"GC as of now removes nothing recent", testGCNow},
	{"GC far in the future removes circuits with their events and counts, and answers", testGCFuture},
	{"GC drops events older than eventsFor and keeps the circuit", testGCEvents},
	{"GC keeps a circuit tripped until reset, however long unused", testGCKeepsTrip},
	{"GC keeps a circuit whose timed trip has not ended, then drops it once ended and unused", testGCKeepsTimedTrip},
	{"Exclusive lets one caller of a key at a time do the work", testExclusive},
	{"Exclusive gives up when ctx ends, without running fn", testExclusiveCancelled},
	{"the breaker state machine runs through Update", testBreaker},
	{"a retry budget allows percent of the first attempts plus min, then refuses retries but never a first attempt", testBudgetSpend},
	{"a retry budget forgets attempts that left its window", testBudgetWindow},
	{"a retry budget counts an attempt dated in the future as made now", testBudgetFuture},
	{"concurrent retries never overspend a retry budget", testBudgetConcurrent},
	{"a retry budget is kept per circuit and lists no circuit", testBudgetApart},
}

var ctx = context.Background()

func testLoadUnknown(t *testing.T, s fusebox.Admin) {
	st := load(t, s, "never-stored")
	sameState(t, st, breaker.State{Name: "never-stored"})
}

func testUpdateStores(t *testing.T, s fusebox.Admin) {
	now := time.Now()
	got, err := s.Update(ctx, "db", func(st *breaker.State) ([]breaker.Event, bool) {
		st.Phase = breaker.Open
		st.ConsecutiveFailures = 3
		st.LastFailure = "connection refused"
		st.LastFailureAt = now
		st.UpdatedAt = now
		return nil, true
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if got.Name != "db" || got.Phase != breaker.Open || got.ConsecutiveFailures != 3 {
		t.Errorf("Update returned %+v, want db open with 3 failures", got)
	}
	sameState(t, load(t, s, "db"), got)
}

func testPeek(t *testing.T, s fusebox.Admin) {
	st, c, err := s.Peek(ctx, "never-stored")
	if err != nil {
		t.Fatalf("Peek of a circuit never stored: %v", err)
	}
	sameState(t, st, breaker.State{Name: "never-stored"})
	if c != (fusebox.Counts{}) {
		t.Errorf("Peek of a circuit never stored counts %+v, want none", c)
	}
	if n, err := s.PeekNames(ctx); err != nil || len(n) != 0 {
		t.Errorf("PeekNames of an empty store = %q, %v; want none", n, err)
	}
	if n := names(t, s); len(n) != 0 {
		t.Errorf("after a Peek the store lists %q, want no circuit", n)
	}
	update(t, s, "db", func(st *breaker.State) { st.Phase, st.ConsecutiveFailures = breaker.Open, 3 })
	count(t, s, "db", fusebox.Counts{Successes: 2, Failures: 3})
	count(t, s, "only-counted", fusebox.Counts{Skips: 1})
	if st, c, err = s.Peek(ctx, "db"); err != nil {
		t.Fatalf("Peek: %v", err)
	}
	sameState(t, st, load(t, s, "db"))
	if want := counts(t, s, "db"); c != want {
		t.Errorf("Peek counts %+v, Counts %+v", c, want)
	}
	if _, c, err = s.Peek(ctx, "only-counted"); err != nil || c != counts(t, s, "only-counted") {
		t.Errorf("Peek of a circuit only counted: %+v, %v; want %+v", c, err, counts(t, s, "only-counted"))
	}
	peeked, err := s.PeekNames(ctx)
	if err != nil {
		t.Fatalf("PeekNames: %v", err)
	}
	if want := names(t, s); !slices.Equal(peeked, want) {
		t.Errorf("PeekNames = %q, Names = %q", peeked, want)
	}
}

func testRoundTrip(t *testing.T, s fusebox.Admin) {
	wall := time.Date(2031, 2, 3, 4, 5, 6, 7, time.UTC)
	opened := breaker.Instant{Wall: wall, Boot: "6f1b0c2e-boot", BootTime: 42 * time.Hour}
	want := breaker.State{
		Name: "every-field", Phase: breaker.Open, Generation: 7, ConsecutiveFailures: 2, Recent: "sfsff",
		OpenedAt: opened, OpenPeriod: breaker.Duration(90 * time.Second), OpenUntil: wall.Add(90 * time.Second),
		Reopens: 1,
		Probes: []breaker.Lease{
			{ID: "a1", Granted: testenv.After(opened, time.Second), For: breaker.Duration(12 * time.Second)},
			{ID: "b2", Granted: testenv.After(opened, 2*time.Second), For: breaker.Duration(12 * time.Second)},
		},
		LastFailureAt: wall, LastFailure: `refused: "quoted" \ and ünïcode`, UpdatedAt: time.Now(),
	}
	update(t, s, "every-field", func(st *breaker.State) { *st = want })
	sameState(t, load(t, s, "every-field"), want)
}

func testUpdateUnchanged(t *testing.T, s fusebox.Admin) {
	got, err := s.Update(ctx, "idle", func(st *breaker.State) ([]breaker.Event, bool) {
		st.ConsecutiveFailures = 1
		return []breaker.Event{{Time: time.Now(), Circuit: "idle", Kind: breaker.EventFailure}}, false
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if got.Name != "idle" {
		t.Errorf("Update returned name %q, want idle", got.Name)
	}
	sameState(t, load(t, s, "idle"), breaker.State{Name: "idle"})
	if evs := events(t, s, "idle", time.Time{}); len(evs) != 0 {
		t.Errorf("events of an unchanged update were stored: %+v", evs)
	}
	if names := names(t, s); len(names) != 0 {
		t.Errorf("Names = %q after an unchanged update, want none", names)
	}
}

func testUpdateSeesStored(t *testing.T, s fusebox.Admin) {
	update(t, s, "db", func(st *breaker.State) { st.ConsecutiveFailures = 41 })
	var seen breaker.State
	update(t, s, "db", func(st *breaker.State) {
		seen = *st
		st.ConsecutiveFailures++
	})
	if seen.Name != "db" || seen.ConsecutiveFailures != 41 {
		t.Errorf("fn was handed %+v, want db with 41 failures", seen)
	}
	if got := load(t, s, "db").ConsecutiveFailures; got != 42 {
		t.Errorf("ConsecutiveFailures = %d, want 42", got)
	}
}

func testEvents(t *testing.T, s fusebox.Admin) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	ev := func(sec int, reason string) breaker.Event {
		return breaker.Event{Time: t0.Add(time.Duration(sec) * time.Second), Circuit: "db", Kind: breaker.EventFailure, Attempt: sec + 1, Reason: reason}
	}
	first := []breaker.Event{ev(0, "refused"), ev(1, "timeout")}
	second := []breaker.Event{ev(2, "reset"), {Time: t0.Add(3 * time.Second), Circuit: "db", Kind: breaker.EventTransition,
		From: breaker.Closed, To: breaker.Open, Reason: "3 consecutive failures", For: breaker.Duration(30 * time.Second)}}
	for _, evs := range [][]breaker.Event{first, second} {
		if _, err := s.Update(ctx, "db", func(st *breaker.State) ([]breaker.Event, bool) {
			st.UpdatedAt = time.Now()
			return evs, true
		}); err != nil {
			t.Fatalf("Update: %v", err)
		}
	}
	all := append(slices.Clone(first), second...)
	sameEvents(t, events(t, s, "db", time.Time{}), all)
	sameEvents(t, events(t, s, "db", t0.Add(time.Second)), all[1:])
	sameEvents(t, events(t, s, "db", t0.Add(time.Hour)), nil)
	sameEvents(t, events(t, s, "other", time.Time{}), nil)
}

func testScanEvents(t *testing.T, s fusebox.Admin) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var stored []breaker.Event
	for i := range 5 {
		stored = append(stored, breaker.Event{Time: t0.Add(time.Duration(i) * time.Second), Circuit: "db", Kind: breaker.EventFailure, Attempt: i + 1, Reason: "refused"})
	}
	if _, err := s.Update(ctx, "db", func(st *breaker.State) ([]breaker.Event, bool) {
		st.UpdatedAt = time.Now()
		return stored, true
	}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	scan := func(name string, since time.Time, most int) []breaker.Event {
		t.Helper()
		var got []breaker.Event
		err := s.ScanEvents(ctx, name, since, func(e breaker.Event) bool {
			got = append(got, e)
			return len(got) < most
		})
		if err != nil {
			t.Fatalf("ScanEvents(%s): %v", name, err)
		}
		return got
	}
	sameEvents(t, scan("db", time.Time{}, 100), stored)
	sameEvents(t, scan("db", t0.Add(2*time.Second), 100), stored[2:])
	sameEvents(t, scan("db", t0.Add(time.Second), 2), stored[1:3])
	sameEvents(t, scan("db", t0.Add(time.Hour), 100), nil)
	sameEvents(t, scan("other", time.Time{}, 100), nil)
}

func testConcurrentUpdates(t *testing.T, s fusebox.Admin) {
	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, err := s.Update(ctx, "busy", func(st *breaker.State) ([]breaker.Event, bool) {
				st.ConsecutiveFailures++
				st.UpdatedAt = time.Now()
				return nil, true
			})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Update: %v", err)
		}
	}
	if got := load(t, s, "busy").ConsecutiveFailures; got != n {
		t.Errorf("ConsecutiveFailures = %d after %d concurrent increments", got, n)
	}
}

func testCounts(t *testing.T, s fusebox.Admin) {
	const n = 50
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c := fusebox.Counts{Successes: 1, Skips: 2, LastSuccess: t0.Add(time.Duration(i) * time.Second)}
			if i%5 == 0 {
				c.Failures = 3
			}
			if err := s.Count(ctx, "down", c); err != nil {
				t.Errorf("Count: %v", err)
			}
		})
	}
	count(t, s, "other", fusebox.Counts{Skips: 1})
	wg.Wait()
	want := fusebox.Counts{Successes: n, Failures: 3 * n / 5, Skips: 2 * n, LastSuccess: t0.Add((n - 1) * time.Second)}
	if got := counts(t, s, "down"); !sameCounts(got, want) {
		t.Errorf("Counts(down) = %+v, want %+v", got, want)
	}
	if got := counts(t, s, "other"); !sameCounts(got, fusebox.Counts{Skips: 1}) {
		t.Errorf("Counts(other) = %+v, want 1 skip", got)
	}
	if got := counts(t, s, "never-counted"); got != (fusebox.Counts{}) {
		t.Errorf("Counts(never-counted) = %+v, want zero", got)
	}
	// An earlier success does not move LastSuccess back.
	count(t, s, "down", fusebox.Counts{Successes: 1, LastSuccess: t0})
	if got := counts(t, s, "down"); !got.LastSuccess.Equal(want.LastSuccess) || got.Successes != n+1 {
		t.Errorf("after an earlier success: %+v, want LastSuccess kept at %s", got, want.LastSuccess)
	}
	if st := load(t, s, "down"); !sameJSON(t, st, breaker.State{Name: "down"}) {
		t.Errorf("counting changed the state: %+v", st)
	}
}

func testAllEvents(t *testing.T, s fusebox.Admin) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	ev := func(name string, sec int, reason string) breaker.Event {
		return breaker.Event{Time: t0.Add(time.Duration(sec) * time.Second), Circuit: name, Kind: breaker.EventFailure, Reason: reason}
	}
	for _, w := range []struct {
		name string
		evs  []breaker.Event
	}{
		{"zigbee", []breaker.Event{ev("zigbee", 1, "a"), ev("zigbee", 5, "b")}},
		{"weather", []breaker.Event{ev("weather", 1, "c"), ev("weather", 3, "d")}},
		{"zigbee", []breaker.Event{ev("zigbee", 9, "e")}},
	} {
		if _, err := s.Update(ctx, w.name, func(st *breaker.State) ([]breaker.Event, bool) {
			st.UpdatedAt = time.Now()
			return w.evs, true
		}); err != nil {
			t.Fatalf("Update: %v", err)
		}
	}
	all, err := s.AllEvents(ctx, t0.Add(time.Second))
	if err != nil {
		t.Fatalf("AllEvents: %v", err)
	}
	want := []breaker.Event{ev("weather", 1, "c"), ev("zigbee", 1, "a"), ev("weather", 3, "d"), ev("zigbee", 5, "b"), ev("zigbee", 9, "e")}
	sameEvents(t, all, want)
	if later, err := s.AllEvents(ctx, t0.Add(4*time.Second)); err != nil || len(later) != 2 {
		t.Errorf("AllEvents since 4s = %d events, %v; want 2", len(later), err)
	}
}

func testNames(t *testing.T, s fusebox.Admin) {
	for _, name := range []string{"b", "a.b", "a", "c-d", "a-b", "A", "_x"} {
		update(t, s, name, func(st *breaker.State) { st.ConsecutiveFailures++ })
	}
	if _, err := s.Update(ctx, "unchanged", func(*breaker.State) ([]breaker.Event, bool) { return nil, false }); err != nil {
		t.Fatalf("Update: %v", err)
	}
	count(t, s, "only-counted", fusebox.Counts{Successes: 1, LastSuccess: time.Now()})
	want := []string{"A", "_x", "a", "a-b", "a.b", "b", "c-d", "only-counted"}
	if got := names(t, s); !slices.Equal(got, want) {
		t.Errorf("Names = %q, want %q", got, want)
	}
}

func testAnswerRoundTrip(t *testing.T, s fusebox.Admin) {
	want := answers.Answer{
		Source:   "primary",
		Status:   200,
		StoredAt: time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC),
		Body:     []byte{0xff, 0xfe, 'o', 'k', 0, '\n', 0xc3, 0x28},
	}
	saveAnswer(t, s, "weather", want)
	got, ok, err := answerStore(t, s).LoadAnswer(ctx, "weather")
	if err != nil || !ok {
		t.Fatalf("LoadAnswer = ok %v, %v; want the saved answer", ok, err)
	}
	sameAnswer(t, got, want)
}

func testAnswerMissing(t *testing.T, s fusebox.Admin) {
	a, ok, err := answerStore(t, s).LoadAnswer(ctx, "never-saved")
	if err != nil || ok {
		t.Errorf("LoadAnswer = %+v, ok %v, %v; want ok false and no error", a, ok, err)
	}
}

func testAnswerReplaced(t *testing.T, s fusebox.Admin) {
	saveAnswer(t, s, "weather", answers.Answer{Source: "primary", StoredAt: time.Now(), Body: []byte("old")})
	want := answers.Answer{Source: "fallback", Status: 203, StoredAt: time.Now(), Body: []byte("new")}
	saveAnswer(t, s, "weather", want)
	got, ok, err := answerStore(t, s).LoadAnswer(ctx, "weather")
	if err != nil || !ok {
		t.Fatalf("LoadAnswer = ok %v, %v", ok, err)
	}
	sameAnswer(t, got, want)
}

// populate stores two circuits with events and skips, and one answer, all
// dated now.
func populate(t *testing.T, s fusebox.Admin) time.Time {
	now := time.Now()
	for _, name := range []string{"api", "db"} {
		if _, err := s.Update(ctx, name, func(st *breaker.State) ([]breaker.Event, bool) {
			st.ConsecutiveFailures++
			st.UpdatedAt = now
			return []breaker.Event{{Time: now, Circuit: name, Kind: breaker.EventFailure, Reason: "refused"}}, true
		}); err != nil {
			t.Fatalf("Update: %v", err)
		}
		count(t, s, name, fusebox.Counts{Skips: 1, LastSuccess: now})
	}
	saveAnswer(t, s, "weather", answers.Answer{Source: "primary", StoredAt: now, Body: []byte("sunny")})
	return now
}

func testGCNow(t *testing.T, s fusebox.Admin) {
	populate(t, s)
	r, err := s.GC(ctx, time.Now(), retention.GCAfter, retention.Events)
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	if len(r.Circuits)+len(r.Answers)+r.Events != 0 {
		t.Errorf("GC removed %+v, want nothing", r)
	}
	if got := names(t, s); !slices.Equal(got, []string{"api", "db"}) {
		t.Errorf("Names = %q after GC, want [api db]", got)
	}
	if evs := events(t, s, "db", time.Time{}); len(evs) != 1 {
		t.Errorf("%d events after GC, want 1", len(evs))
	}
	if c := counts(t, s, "db"); c.Skips != 1 {
		t.Errorf("Counts = %+v after GC; want 1 skip", c)
	}
	if _, ok, err := answerStore(t, s).LoadAnswer(ctx, "weather"); !ok || err != nil {
		t.Errorf("LoadAnswer = ok %v, %v after GC; want the answer", ok, err)
	}
}

func testGCFuture(t *testing.T, s fusebox.Admin) {
	now := populate(t, s)
	r, err := s.GC(ctx, now.Add(365*24*time.Hour), time.Hour, time.Hour)
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	if !slices.Equal(r.Circuits, []string{"api", "db"}) || !slices.Equal(r.Answers, []string{"weather"}) {
		t.Errorf("GC removed circuits %q and answers %q; want [api db] and [weather]", r.Circuits, r.Answers)
	}
	if got := names(t, s); len(got) != 0 {
		t.Errorf("Names = %q after GC, want none", got)
	}
	sameState(t, load(t, s, "db"), breaker.State{Name: "db"})
	if evs := events(t, s, "db", time.Time{}); len(evs) != 0 {
		t.Errorf("events left after GC: %+v", evs)
	}
	if c := counts(t, s, "db"); c != (fusebox.Counts{}) {
		t.Errorf("Counts = %+v after GC; want none", c)
	}
	if _, ok, err := answerStore(t, s).LoadAnswer(ctx, "weather"); ok || err != nil {
		t.Errorf("LoadAnswer = ok %v, %v after GC; want none", ok, err)
	}
}

func testGCEvents(t *testing.T, s fusebox.Admin) {
	now := time.Now()
	at := func(ago time.Duration, reason string) breaker.Event {
		return breaker.Event{Time: now.Add(-ago), Circuit: "db", Kind: breaker.EventFailure, Reason: reason}
	}
	evs := []breaker.Event{at(3*time.Hour, "old"), at(2*time.Hour, "older than an hour"), at(30*time.Minute, "recent"), at(0, "now")}
	if _, err := s.Update(ctx, "db", func(st *breaker.State) ([]breaker.Event, bool) {
		st.UpdatedAt = now
		return evs, true
	}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	r, err := s.GC(ctx, now, retention.GCAfter, time.Hour)
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	if r.Events != 2 || len(r.Circuits) != 0 {
		t.Errorf("GC report %+v, want 2 events and no circuit dropped", r)
	}
	sameEvents(t, events(t, s, "db", time.Time{}), evs[2:])
	if got := names(t, s); !slices.Equal(got, []string{"db"}) {
		t.Errorf("Names = %q after GC, want [db]", got)
	}
}

func testBreaker(t *testing.T, s fusebox.Admin) {
	p := fusebox.Policy{}.WithDefaults().Breaker
	now := breaker.Instant{Wall: time.Now().Round(0)}
	fail := breaker.Outcome{Failed: true, Attempt: 1, Reason: "connection refused"}
	var recorded []breaker.Event
	act := func(f func(st *breaker.State) []breaker.Event) breaker.State {
		t.Helper()
		st, err := s.Update(ctx, "api", func(st *breaker.State) ([]breaker.Event, bool) {
			evs := f(st)
			recorded = append(recorded, evs...)
			return evs, true
		})
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
		return st
	}
	for range p.TripAfter {
		act(func(st *breaker.State) []breaker.Event {
			return st.Record(p, now, breaker.Permit{Generation: st.Generation}, fail)
		})
	}
	st := load(t, s, "api")
	if st.Phase != breaker.Open || st.ConsecutiveFailures != p.TripAfter {
		t.Fatalf("after %d failures: %+v, want open", p.TripAfter, st)
	}
	if _, err := st.Decide(testenv.After(now, time.Second)); !errors.Is(err, breaker.ErrOpen) {
		t.Errorf("Decide on the loaded state = %v, want ErrOpen", err)
	}

	if st := act(func(st *breaker.State) []breaker.Event { return st.Trip(now, 0, "") }); st.Phase != breaker.ForcedOpen {
		t.Errorf("after Trip: phase %s, want forced_open", st.Phase)
	}
	if st := act(func(st *breaker.State) []breaker.Event { return st.Reset(now, "") }); st.Phase != breaker.Closed {
		t.Errorf("after Reset: phase %s, want closed", st.Phase)
	}
	st = load(t, s, "api")
	if _, err := st.Decide(now); err != nil {
		t.Errorf("Decide after Reset = %v, want a permit", err)
	}
	sameEvents(t, events(t, s, "api", time.Time{}), recorded)
	if n := len(recorded); n != p.TripAfter+3 {
		t.Errorf("%d events recorded, want %d failures and 3 transitions", n, p.TripAfter)
	}
}

func load(t *testing.T, s fusebox.Admin, name string) breaker.State {
	t.Helper()
	st, err := s.Load(ctx, name)
	if err != nil {
		t.Fatalf("Load(%s): %v", name, err)
	}
	return st
}

// update stores what f makes of the circuit's state, dated now.
func update(t *testing.T, s fusebox.Admin, name string, f func(*breaker.State)) {
	t.Helper()
	if _, err := s.Update(ctx, name, func(st *breaker.State) ([]breaker.Event, bool) {
		st.UpdatedAt = time.Now()
		f(st)
		return nil, true
	}); err != nil {
		t.Fatalf("Update(%s): %v", name, err)
	}
}

func events(t *testing.T, s fusebox.Admin, name string, since time.Time) []breaker.Event {
	t.Helper()
	evs, err := s.Events(ctx, name, since)
	if err != nil {
		t.Fatalf("Events(%s): %v", name, err)
	}
	return evs
}

func names(t *testing.T, s fusebox.Admin) []string {
	t.Helper()
	names, err := s.Names(ctx)
	if err != nil {
		t.Fatalf("Names: %v", err)
	}
	return names
}

func count(t *testing.T, s fusebox.Admin, name string, c fusebox.Counts) {
	t.Helper()
	if err := s.Count(ctx, name, c); err != nil {
		t.Fatalf("Count(%s): %v", name, err)
	}
}

func counts(t *testing.T, s fusebox.Admin, name string) fusebox.Counts {
	t.Helper()
	c, err := s.Counts(ctx, name)
	if err != nil {
		t.Fatalf("Counts(%s): %v", name, err)
	}
	return c
}

func sameCounts(a, b fusebox.Counts) bool {
	return a.Successes == b.Successes && a.Failures == b.Failures && a.Skips == b.Skips && a.LastSuccess.Equal(b.LastSuccess)
}

func sameJSON(t *testing.T, a, b any) bool { return jsonOf(t, a) == jsonOf(t, b) }

// answerStore returns s as an answers.Store; the answer cases apply only to a
// store that keeps answers.
func answerStore(t *testing.T, s fusebox.Admin) answers.Store {
	t.Helper()
	a, ok := s.(answers.Store)
	if !ok {
		testenv.Skip(t, "%T keeps no answers (it is no answers.Store)", s)
	}
	return a
}

func saveAnswer(t *testing.T, s fusebox.Admin, key string, a answers.Answer) {
	t.Helper()
	if err := answerStore(t, s).SaveAnswer(ctx, key, a); err != nil {
		t.Fatalf("SaveAnswer(%s): %v", key, err)
	}
}

// sameState compares states as their JSON, which is what a store keeps: a
// time's monotonic reading and location do not survive it and do not matter.
func sameState(t *testing.T, got, want breaker.State) {
	t.Helper()
	if g, w := jsonOf(t, got), jsonOf(t, want); g != w {
		t.Errorf("state\n got %s\nwant %s", g, w)
	}
}

func sameEvents(t *testing.T, got, want []breaker.Event) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if g, w := jsonOf(t, got), jsonOf(t, want); g != w {
		t.Errorf("events\n got %s\nwant %s", g, w)
	}
}

func sameAnswer(t *testing.T, got, want answers.Answer) {
	t.Helper()
	if got.Source != want.Source || got.Status != want.Status || !got.StoredAt.Equal(want.StoredAt) || !bytes.Equal(got.Body, want.Body) {
		t.Errorf("answer\n got %+v\nwant %+v", got, want)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	return string(b)
}

func testGCKeepsTrip(t *testing.T, s fusebox.Admin) {
	now := time.Now()
	if _, err := s.Update(ctx, "nas", func(st *breaker.State) ([]breaker.Event, bool) {
		return st.Trip(breaker.Instant{Wall: now}, 0, ""), true
	}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	r, err := s.GC(ctx, now.Add(365*24*time.Hour), time.Hour, time.Hour)
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	if len(r.Circuits) != 0 || load(t, s, "nas").Phase != breaker.ForcedOpen {
		t.Errorf("GC removed %q; a trip until reset must stay", r.Circuits)
	}
}

func testGCKeepsTimedTrip(t *testing.T, s fusebox.Admin) {
	now := time.Now()
	const day = 24 * time.Hour
	if _, err := s.Update(ctx, "maint", func(st *breaker.State) ([]breaker.Event, bool) {
		return st.Trip(breaker.Instant{Wall: now}, 30*day, ""), true
	}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	r, err := s.GC(ctx, now.Add(8*day), 7*day, 7*day)
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	if len(r.Circuits) != 0 || load(t, s, "maint").Phase != breaker.ForcedOpen {
		t.Fatalf("GC 8 days into a 30-day trip removed %q; the trip must stay until it ends", r.Circuits)
	}
	r, err = s.GC(ctx, now.Add(40*day), 7*day, 7*day)
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	if !slices.Equal(r.Circuits, []string{"maint"}) {
		t.Errorf("GC 10 days after a trip ended, unused since, removed %q; want [maint]", r.Circuits)
	}
}

func testExclusive(t *testing.T, s fusebox.Admin) {
	var mu sync.Mutex
	inside, most, runs := 0, 0, 0
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := answerStore(t, s).Exclusive(ctx, "weather", func() error {
				mu.Lock()
				inside++
				most = max(most, inside)
				runs++
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				inside--
				mu.Unlock()
				return nil
			})
			if err != nil {
				t.Errorf("Exclusive: %v", err)
			}
		}()
	}
	wg.Wait()
	if most != 1 || runs != 20 {
		t.Errorf("%d callers inside at once and %d runs; want 1 and 20", most, runs)
	}
	want := errors.New("fn failed")
	if err := answerStore(t, s).Exclusive(ctx, "weather", func() error { return want }); !errors.Is(err, want) {
		t.Errorf("Exclusive = %v, want fn's error", err)
	}
}

func testExclusiveCancelled(t *testing.T, s fusebox.Admin) {
	held := make(chan struct{})
	release := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		answerStore(t, s).Exclusive(ctx, "weather", func() error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	ran := false
	if err := answerStore(t, s).Exclusive(cctx, "weather", func() error { ran = true; return nil }); err == nil || ran {
		t.Errorf("Exclusive on a held key with an ending ctx = %v, ran %v; want an error and fn not run", err, ran)
	}
	close(release)
	<-done
}

// budgetOf returns s as a BudgetStore: every fusebox store keeps retry
// budgets.
func budgetOf(t *testing.T, s fusebox.Admin) fusebox.BudgetStore {
	t.Helper()
	bs, ok := s.(fusebox.BudgetStore)
	if !ok {
		t.Fatalf("%T keeps no retry budgets: it does not implement fusebox.BudgetStore", s)
	}
	return bs
}

// spend spends from the circuit's budget and fails the test on an error.
func spend(t *testing.T, bs fusebox.BudgetStore, name string, b fusebox.RetryBudget, now time.Time, retry bool) fusebox.BudgetSpend {
	t.Helper()
	got, err := bs.SpendBudget(ctx, name, b, now, retry)
	if err != nil {
		t.Fatalf("SpendBudget(%s, retry %v): %v", name, retry, err)
	}
	return got
}

var budget20 = fusebox.RetryBudget{Percent: 0.2, Min: 3, Window: 10 * time.Second}

func testBudgetSpend(t *testing.T, s fusebox.Admin) {
	bs := budgetOf(t, s)
	now := time.Now()
	for i := range 10 {
		if got := spend(t, bs, "db", budget20, now, false); got != (fusebox.BudgetSpend{Allowed: true, Firsts: i + 1}) {
			t.Fatalf("first attempt %d: got %+v", i+1, got)
		}
	}
	allowed := budgetlog.Allowed(budget20, 10) // 20% of 10, plus 3
	for i := range allowed {
		if got := spend(t, bs, "db", budget20, now, true); !got.Allowed || got.Retries != i+1 || got.Firsts != 10 {
			t.Fatalf("retry %d of the %d allowed: got %+v", i+1, allowed, got)
		}
	}
	if got := spend(t, bs, "db", budget20, now, true); got != (fusebox.BudgetSpend{Firsts: 10, Retries: allowed}) {
		t.Fatalf("retry past the budget: got %+v, want refused with %d retries for 10 first attempts", got, allowed)
	}
	if got := spend(t, bs, "db", budget20, now, false); !got.Allowed || got.Firsts != 11 {
		t.Fatalf("a first attempt after the budget ran out: got %+v, want allowed as the 11th", got)
	}
}

func testBudgetWindow(t *testing.T, s fusebox.Admin) {
	bs := budgetOf(t, s)
	start := time.Now()
	for range 5 {
		spend(t, bs, "db", budget20, start, false)
	}
	for range budgetlog.Allowed(budget20, 5) {
		spend(t, bs, "db", budget20, start, true)
	}
	if got := spend(t, bs, "db", budget20, start.Add(budget20.Window-time.Millisecond), true); got.Allowed {
		t.Fatalf("a retry just inside the window of a spent budget: got %+v, want refused", got)
	}
	later := start.Add(budget20.Window + time.Millisecond)
	for i := range budget20.Min {
		if got := spend(t, bs, "db", budget20, later, true); !got.Allowed || got.Firsts != 0 || got.Retries != i+1 {
			t.Fatalf("retry %d once the window has passed: got %+v, want allowed by min with no first attempts left", i+1, got)
		}
	}
	if got := spend(t, bs, "db", budget20, later, true); got.Allowed {
		t.Fatalf("retry past min with no first attempts in the window: got %+v, want refused", got)
	}
}

func testBudgetFuture(t *testing.T, s fusebox.Admin) {
	bs := budgetOf(t, s)
	now := time.Now()
	ahead := now.Add(time.Hour) // a host whose clock was an hour ahead
	for range 5 {
		spend(t, bs, "db", budget20, ahead, false)
	}
	for range budgetlog.Allowed(budget20, 5) {
		spend(t, bs, "db", budget20, ahead, true)
	}
	if got := spend(t, bs, "db", budget20, now, true); got.Allowed || got.Firsts != 5 {
		t.Fatalf("a retry now, the budget spent an hour ahead: got %+v, want refused with the 5 first attempts counted", got)
	}
	later := now.Add(budget20.Window + time.Millisecond)
	if got := spend(t, bs, "db", budget20, later, true); !got.Allowed || got.Firsts != 0 || got.Retries != 1 {
		t.Fatalf("a retry one window after the attempts dated ahead: got %+v, want allowed by min, nothing left in the window", got)
	}
}

func testBudgetConcurrent(t *testing.T, s fusebox.Admin) {
	bs := budgetOf(t, s)
	now := time.Now()
	const firsts, callers = 10, 40
	for range firsts {
		spend(t, bs, "db", budget20, now, false)
	}
	var mu sync.Mutex
	allowed := 0
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			got, err := bs.SpendBudget(ctx, "db", budget20, now, true)
			if err != nil {
				t.Errorf("SpendBudget: %v", err)
				return
			}
			if got.Allowed {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if want := budgetlog.Allowed(budget20, firsts); allowed != want {
		t.Fatalf("%d concurrent retries for %d first attempts: %d allowed, want exactly %d", callers, firsts, allowed, want)
	}
}

func testBudgetApart(t *testing.T, s fusebox.Admin) {
	bs := budgetOf(t, s)
	now := time.Now()
	tight := fusebox.RetryBudget{Percent: 0, Min: 1, Window: time.Minute}
	spend(t, bs, "a", tight, now, true)
	if got := spend(t, bs, "b", tight, now, true); !got.Allowed || got.Retries != 1 {
		t.Fatalf("b's first retry after a spent a's budget: got %+v, want allowed", got)
	}
	if got := spend(t, bs, "a", tight, now, true); got.Allowed {
		t.Fatalf("a's second retry with min 1: got %+v, want refused", got)
	}
	names, err := s.Names(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 0 {
		t.Fatalf("Names after spending budgets only: %v, want none", names)
	}
}
