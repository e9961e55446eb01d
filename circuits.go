package fusebox

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// Circuits runs calls under persistent circuit breakers kept in a Store. It is
// safe for concurrent use.
type Circuits struct {
	store     Store
	budgets   BudgetStore // store, when it keeps retry budgets
	policy    func(name string) Policy
	clock     Clock
	logger    *slog.Logger
	listeners *dispatcher // nil without WithListener
	// wall is set when the clock is WallClock: then one time.Now serves
	// both the call's deadline and the breaker's decision.
	wall bool
	// quiet is set when the logger discards everything (the default): a
	// call then skips its log lines with one test.
	quiet bool
}

// Option configures Circuits.
type Option func(*Circuits)

// WithPolicy uses p (with defaults filled in) for every circuit.
func WithPolicy(p Policy) Option {
	p = p.WithDefaults()
	return func(c *Circuits) { c.policy = func(string) Policy { return p } }
}

// WithPolicies looks up each circuit's policy by name; defaults are filled in.
func WithPolicies(f func(name string) Policy) Option {
	return func(c *Circuits) { c.policy = func(n string) Policy { return f(n).WithDefaults() } }
}

// WithClock sets the clock (default WallClock).
func WithClock(clk Clock) Option { return func(c *Circuits) { c.clock = clk } }

// WithLogger sets where attempts, waits, skips and transitions are logged
// (default: nowhere).
func WithLogger(l *slog.Logger) Option { return func(c *Circuits) { c.logger = l } }

// WithListener has every failure, transition, success and skip of every
// circuit reported to fn (see breaker.EventKind). fn runs on a goroutine of
// its own, one event at a time and in order, after the store's lock is
// released: a listener that is slow, blocks or panics never delays or fails
// a call.
// Events wait in a bounded queue; when fn falls too far behind, new events
// are dropped and the drop is logged. Flush waits for the queue to drain.
// Several listeners are called in the order they were given.
func WithListener(fn func(breaker.Event)) Option {
	return func(c *Circuits) {
		c.dispatcher().fns = append(c.listeners.fns, fn)
	}
}

// WithSyncListener has every event WithListener reports given to fn on the
// goroutine of the call it comes from, as it happens, after the store's
// lock is released. fn must be quick and must never block: the call waits
// for it. A panic in it is logged and goes no further. It is for a counter
// (a daemon's metrics): handing each event to a goroutine of its own costs
// more than counting it.
func WithSyncListener(fn func(breaker.Event)) Option {
	return func(c *Circuits) {
		c.dispatcher().syncFns = append(c.listeners.syncFns, fn)
	}
}

func (c *Circuits) dispatcher() *dispatcher {
	if c.listeners == nil {
		c.listeners = &dispatcher{logger: func() *slog.Logger { return c.logger }}
	}
	return c.listeners
}

// defaultPolicy is the policy used when nothing is configured, computed once.
var defaultPolicy = Policy{}.WithDefaults()

// New returns Circuits that keep state in store.
func New(store Store, opts ...Option) *Circuits {
	c := &Circuits{
		store:  store,
		policy: func(string) Policy { return defaultPolicy },
		clock:  WallClock{},
		logger: slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		o(c)
	}
	_, c.wall = c.clock.(WallClock)
	c.budgets, _ = store.(BudgetStore)
	c.quiet = c.logger.Handler() == slog.DiscardHandler
	return c
}

// now reads the time for an attempt: the time its deadlines count from, and
// the breaker's instant, from one clock read when the clock is WallClock.
func (c *Circuits) now() (time.Time, breaker.Instant) {
	t := time.Now()
	if c.wall {
		return t, breaker.Instant{Wall: t}
	}
	return t, c.clock.Now()
}

// since is the breaker's instant now, for an attempt begun at start (as now
// gave it). With WallClock it adds the monotonic time elapsed to start: that
// clock is cheaper to read than the wall clock.
func (c *Circuits) since(start breaker.Instant) breaker.Instant {
	if c.wall {
		return breaker.Instant{Wall: start.Wall.Add(time.Since(start.Wall))}
	}
	return c.clock.Now()
}

// Clock returns the clock the circuits are timed by.
func (c *Circuits) Clock() Clock { return c.clock }

// Flush waits until every event reported so far has reached the listeners,
// or ctx ends. A short-lived process calls it before it exits, once its
// output is written, so that a notification is not lost.
func (c *Circuits) Flush(ctx context.Context) error {
	if c.listeners == nil {
		return nil
	}
	return c.listeners.flush(ctx)
}

// Trip forces the named circuit open, for d or (d == 0) until Reset: every
// call skips it meanwhile. Its event records by whom ("" is by hand,
// breaker.State.Trip). It returns the circuit's view afterwards.
func (c *Circuits) Trip(ctx context.Context, name string, d time.Duration, by string) (breaker.View, error) {
	if d < 0 {
		return breaker.View{}, fmt.Errorf("trip %s: negative duration %s", name, d)
	}
	return c.force(ctx, name, func(st *breaker.State, now breaker.Instant) ([]breaker.Event, bool) {
		return st.Trip(now, d, by), true
	})
}

// PressTrip is Trip for a press (an MQTT button, an automation): it never
// shortens a trip in force. On a circuit forced open until reset, or until
// later than d from now, it changes nothing; otherwise it trips as Trip
// does.
func (c *Circuits) PressTrip(ctx context.Context, name string, d time.Duration, by string) (breaker.View, error) {
	if d <= 0 {
		return breaker.View{}, fmt.Errorf("trip %s: a press trips for a positive duration, got %s", name, d)
	}
	return c.force(ctx, name, func(st *breaker.State, now breaker.Instant) ([]breaker.Event, bool) {
		if v := st.View(now); v.Phase == breaker.ForcedOpen && (v.OpenUntil.IsZero() || !v.OpenUntil.Before(now.Wall.Add(d))) {
			return nil, false
		}
		return st.Trip(now, d, by), true
	})
}

// Reset closes the named circuit and forgets its failures; its counts are
// kept. Its event records by whom ("" is by hand, breaker.State.Reset). It
// returns the circuit's view afterwards.
func (c *Circuits) Reset(ctx context.Context, name, by string) (breaker.View, error) {
	return c.force(ctx, name, func(st *breaker.State, now breaker.Instant) ([]breaker.Event, bool) { return st.Reset(now, by), true })
}

func (c *Circuits) force(ctx context.Context, name string, apply func(*breaker.State, breaker.Instant) ([]breaker.Event, bool)) (breaker.View, error) {
	if err := ValidateName(name); err != nil {
		return breaker.View{}, err
	}
	var now breaker.Instant
	var events []breaker.Event
	skips := skipTotal(ctx, c.store, name)
	st, err := c.store.Update(ctx, name, func(st *breaker.State) ([]breaker.Event, bool) {
		now = c.clock.Now()
		var changed bool
		events, changed = apply(st, now)
		stamp(events, skips, breaker.RetryRecord{})
		return events, changed
	})
	if err != nil {
		return breaker.View{}, fmt.Errorf("update %s: %w", name, err)
	}
	k := &call{c: c, name: name, byHand: true}
	k.logEvents(events)
	return st.View(now), nil
}
