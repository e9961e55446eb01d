package fusebox

import (
	"context"
	"fmt"
	"slices"

	"github.com/fusebox-hq/fusebox/breaker"
)

// Watched applies a watch's verdict, up or down, to the named circuit, for
// reason, as breaker.State.Watch describes; transitions are
// logged and told to listeners as any call's are. A verdict that changes
// nothing is judged on a state read without a lock and writes nothing: a
// watch that hears "online" every minute costs a Load. Watched returns the
// circuit's view afterwards, and whether it changed.
func (c *Circuits) Watched(ctx context.Context, name string, p breaker.Policy, up bool, reason string) (breaker.View, bool, error) {
	if err := ValidateName(name); err != nil {
		return breaker.View{}, false, err
	}
	apply := func(st *breaker.State, now breaker.Instant) ([]breaker.Event, bool) {
		return st.Watch(p, now, up, reason)
	}
	if st, err := c.store.Load(ctx, name); err == nil {
		now := c.clock.Now()
		look := st
		look.Probes, look.Recoveries = slices.Clone(st.Probes), slices.Clone(st.Recoveries)
		if _, changed := apply(&look, now); !changed {
			return st.View(now), false, nil
		}
	}
	var now breaker.Instant
	var events []breaker.Event
	var changed bool
	skips := skipTotal(ctx, c.store, name)
	st, err := c.store.Update(ctx, name, func(st *breaker.State) ([]breaker.Event, bool) {
		now = c.clock.Now()
		events, changed = apply(st, now)
		stamp(events, skips, breaker.RetryRecord{})
		return events, changed
	})
	if err != nil {
		return breaker.View{}, false, fmt.Errorf("update %s: %w", name, err)
	}
	k := &call{c: c, name: name}
	k.logEvents(events)
	return st.View(now), changed, nil
}
