package fusebox_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/mem"
)

// lockWatch is a Store that knows when an Update holds its lock.
type lockWatch struct {
	fusebox.Store
	held    atomic.Int32
	updates atomic.Int32
}

func (s *lockWatch) Update(ctx context.Context, name string, fn func(*breaker.State) ([]breaker.Event, bool)) (breaker.State, error) {
	s.updates.Add(1)
	return s.Store.Update(ctx, name, func(st *breaker.State) ([]breaker.Event, bool) {
		s.held.Add(1)
		defer s.held.Add(-1)
		return fn(st)
	})
}

// recorder is a listener that keeps what it is told.
type recorder struct {
	mu     sync.Mutex
	events []breaker.Event
}

func (r *recorder) listen(e breaker.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		k := string(e.Kind)
		if e.Kind == breaker.EventTransition {
			k += ":" + string(e.To)
		}
		out = append(out, k)
	}
	return out
}

func onePolicy() fusebox.Policy {
	return fusebox.Policy{
		Retry:   fusebox.RetryPolicy{Attempts: 1},
		Breaker: breaker.Policy{TripAfter: 2, OpenFor: time.Minute},
	}
}

func TestListenerHearsEveryFailureTransitionSuccessAndSkipInOrder(t *testing.T) {
	rec := &recorder{}
	c := fusebox.New(mem.New(), fusebox.WithPolicy(onePolicy()), fusebox.WithListener(rec.listen))
	ctx := context.Background()
	c.Do(ctx, "api", func(context.Context) error { return nil })
	for range 2 {
		c.Do(ctx, "api", func(context.Context) error { return errRefused })
	}
	if err := c.Do(ctx, "api", func(context.Context) error { return nil }); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("Do on the open circuit = %v", err)
	}
	if _, err := c.Reset(ctx, "api", ""); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"success", "failure", "failure", "transition:open", "skip", "transition:closed"}
	if got := rec.kinds(); !slices.Equal(got, want) {
		t.Errorf("listener heard %q, want %q", got, want)
	}
}

func TestListenerRunsAfterTheLockIsReleased(t *testing.T) {
	store := &lockWatch{Store: mem.New()}
	heardUnderLock := make(chan bool, 16)
	var c *fusebox.Circuits
	c = fusebox.New(store, fusebox.WithPolicy(onePolicy()), fusebox.WithListener(func(e breaker.Event) {
		if e.Kind != breaker.EventTransition {
			return
		}
		under := store.held.Load() != 0
		// Taking the circuit's lock from the listener works: nobody holds it.
		_, err := store.Update(context.Background(), e.Circuit, func(*breaker.State) ([]breaker.Event, bool) { return nil, false })
		heardUnderLock <- under || err != nil
	}))
	ctx := context.Background()
	for range 2 {
		c.Do(ctx, "api", func(context.Context) error { return errRefused })
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case under := <-heardUnderLock:
		if under {
			t.Error("the transition reached the listener while the store's lock was held")
		}
	default:
		t.Fatal("the listener never heard the circuit open")
	}
}

func TestABlockedListenerDelaysNoCall(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	rec := &recorder{}
	c := fusebox.New(mem.New(), fusebox.WithPolicy(onePolicy()), fusebox.WithListener(func(e breaker.Event) {
		once.Do(func() { close(entered); <-release })
		rec.listen(e)
	}))
	ctx := context.Background()
	c.Do(ctx, "api", func(context.Context) error { return errRefused })
	<-entered // the listener now blocks on its first event

	// Every later call returns while the listener is stuck.
	for range 20 {
		c.Do(ctx, "api", func(context.Context) error { return errRefused })
	}
	if _, err := c.Trip(ctx, "api", time.Hour, ""); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Flush(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Flush with a listener stuck and ctx done = %v, want ctx's error", err)
	}

	close(release)
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := rec.kinds()
	want := []string{"failure", "failure", "transition:open"}
	for range 19 {
		want = append(want, "skip")
	}
	want = append(want, "transition:forced_open")
	if !slices.Equal(got, want) {
		t.Errorf("after release the listener heard %q, want %q", got, want)
	}
}

func TestAListenerThatPanicsFailsNoCall(t *testing.T) {
	log := &logBuffer{}
	c := fusebox.New(mem.New(), fusebox.WithPolicy(onePolicy()), fusebox.WithLogger(newTestLogger(log)),
		fusebox.WithListener(func(breaker.Event) { panic("listener bug") }))
	ctx := context.Background()
	if err := c.Do(ctx, "api", func(context.Context) error { return nil }); err != nil {
		t.Fatalf("Do = %v, want the call's own success", err)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := log.Lines("level=ERROR", "a listener panicked", "listener bug"); len(got) != 1 {
		t.Errorf("want one warning naming the panic; log:\n%s", log)
	}
}

// A sync listener hears each event before the call that made it returns,
// after the store's lock is released, with no Flush; one that panics fails
// no call; an async listener beside it still hears everything.
func TestSyncListener(t *testing.T) {
	store := &lockWatch{Store: mem.New()}
	log := &logBuffer{}
	inline, queued := &recorder{}, &recorder{}
	var underLock atomic.Bool
	c := fusebox.New(store, fusebox.WithPolicy(onePolicy()), fusebox.WithLogger(newTestLogger(log)),
		fusebox.WithSyncListener(func(e breaker.Event) {
			underLock.Store(underLock.Load() || store.held.Load() != 0)
			inline.listen(e)
		}),
		fusebox.WithSyncListener(func(e breaker.Event) {
			if e.Kind == breaker.EventSkip {
				panic("listener bug")
			}
		}),
		fusebox.WithListener(queued.listen))
	ctx := context.Background()
	c.Do(ctx, "api", func(context.Context) error { return nil })
	if got := inline.kinds(); !slices.Equal(got, []string{"success"}) {
		t.Errorf("as Do returned the sync listener had heard %q, want the success", got)
	}
	for range 2 {
		c.Do(ctx, "api", func(context.Context) error { return errRefused })
	}
	if err := c.Do(ctx, "api", func(context.Context) error { return nil }); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("Do on the open circuit = %v, want ErrOpen, whatever a listener does", err)
	}
	want := []string{"success", "failure", "failure", "transition:open", "skip"}
	if got := inline.kinds(); !slices.Equal(got, want) {
		t.Errorf("the sync listener heard %q, want %q", got, want)
	}
	if underLock.Load() {
		t.Error("the sync listener ran while the store's lock was held")
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := inline.kinds(); !slices.Equal(got, want) {
		t.Errorf("the async listener heard %q, want %q", got, want)
	}
	if got := log.Lines("level=ERROR", "a listener panicked", "listener bug"); len(got) != 1 {
		t.Errorf("want one line naming the panic; log:\n%s", log)
	}
}

func TestAQuietSuccessOnlyCounts(t *testing.T) {
	t.Run("mem", func(t *testing.T) { testAQuietSuccessOnlyCounts(t, mem.New()) })
	t.Run("file", func(t *testing.T) {
		s, err := file.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		testAQuietSuccessOnlyCounts(t, s)
	})
}

func testAQuietSuccessOnlyCounts(t *testing.T, s fusebox.Store) {
	store := &lockWatch{Store: s}
	c := fusebox.New(store, fusebox.WithPolicy(onePolicy()))
	ctx := context.Background()
	for range 5 {
		if err := c.Do(ctx, "healthy", func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if n := store.updates.Load(); n != 0 {
		t.Errorf("5 successes on a closed circuit made %d Updates, want none: a healthy call takes no lock", n)
	}
	if cn, _ := store.Counts(ctx, "healthy"); cn.Successes != 5 || cn.LastSuccess.IsZero() {
		t.Errorf("Counts = %+v, want 5 successes and the last one's time", cn)
	}

	// A success after a failure has a failure to forget: it goes through Update.
	c.Do(ctx, "healthy", func(context.Context) error { return errRefused })
	before := store.updates.Load()
	c.Do(ctx, "healthy", func(context.Context) error { return nil })
	st, _ := store.Load(ctx, "healthy")
	if store.updates.Load() == before || st.ConsecutiveFailures != 0 {
		t.Errorf("a success after a failure left %+v without an Update", st)
	}
}

func TestTripAndResetSteerTheCircuit(t *testing.T) {
	rec := &recorder{}
	c := fusebox.New(mem.New(), fusebox.WithListener(rec.listen))
	ctx := context.Background()
	v, err := c.Trip(ctx, "nas", 10*time.Minute, "")
	if err != nil || v.Phase != breaker.ForcedOpen || v.ReopensIn != 10*time.Minute {
		t.Fatalf("Trip = %+v, %v; want forced open for 10m", v, err)
	}
	ran := false
	if err := c.Do(ctx, "nas", func(context.Context) error { ran = true; return nil }); !errors.Is(err, breaker.ErrOpen) || ran {
		t.Errorf("Do on a tripped circuit = %v, ran %v", err, ran)
	}
	if v, err := c.Reset(ctx, "nas", ""); err != nil || v.Phase != breaker.Closed {
		t.Errorf("Reset = %+v, %v; want closed", v, err)
	}
	if err := c.Do(ctx, "nas", func(context.Context) error { ran = true; return nil }); err != nil || !ran {
		t.Errorf("Do after Reset = %v, ran %v", err, ran)
	}
	if _, err := c.Trip(ctx, "../etc", 0, ""); err == nil {
		t.Error("Trip took an invalid name")
	}
	if _, err := c.Trip(ctx, "nas", -time.Second, ""); err == nil {
		t.Error("Trip took a negative duration")
	}
	c.Flush(ctx)
	if got := rec.kinds(); !slices.Equal(got, []string{"transition:forced_open", "skip", "transition:closed", "success"}) {
		t.Errorf("listener heard %q", got)
	}
}

// newTestLogger logs to b without timestamps.
func newTestLogger(b *logBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
}

// stoppedClock is a Clock that always reads the same instant.
type stoppedClock breaker.Instant

func (c stoppedClock) Now() breaker.Instant { return breaker.Instant(c) }

func TestEventsAndLastSuccessAreTimedByTheCircuitsClock(t *testing.T) {
	at := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC) // far from the wall clock
	rec := &recorder{}
	store := mem.New()
	c := fusebox.New(store, fusebox.WithPolicy(onePolicy()), fusebox.WithListener(rec.listen),
		fusebox.WithClock(stoppedClock{Wall: at}))
	ctx := context.Background()
	c.Do(ctx, "api", func(context.Context) error { return nil })
	for range 2 {
		c.Do(ctx, "api", func(context.Context) error { return errRefused })
	}
	c.Do(ctx, "api", func(context.Context) error { return nil }) // skipped
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rec.kinds(); len(got) != 5 {
		t.Fatalf("listener heard %q, want success, two failures, the opening and a skip", got)
	}
	for _, e := range rec.events {
		if !e.Time.Equal(at) {
			t.Errorf("%s event at %v, want the clock's %v", e.Kind, e.Time, at)
		}
	}
	counts, err := store.Counts(ctx, "api")
	if err != nil {
		t.Fatal(err)
	}
	if !counts.LastSuccess.Equal(at) {
		t.Errorf("LastSuccess = %v, want the clock's %v", counts.LastSuccess, at)
	}
}

func TestLastSuccessIsWhenTheAttemptEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := mem.New()
		c := fusebox.New(store) // the WallClock: the end is read from the monotonic clock
		start := time.Now()
		if err := c.Do(context.Background(), "api", func(context.Context) error {
			time.Sleep(3 * time.Second)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		counts, err := store.Counts(context.Background(), "api")
		if err != nil {
			t.Fatal(err)
		}
		if want := start.Add(3 * time.Second); !counts.LastSuccess.Equal(want) {
			t.Errorf("LastSuccess = %v, want the attempt's end %v", counts.LastSuccess, want)
		}
	})
}
