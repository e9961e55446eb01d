package serve

import (
	"context"
	"time"

	"golang.org/x/sync/singleflight"
)

// sharedReadTimeout bounds a reading of the store that callers share
// (shared): the first caller's own end no longer ends it.
const sharedReadTimeout = 10 * time.Second

// shared runs read under key once for every caller asking while it runs:
// the status pages polling /api/outages and a Prometheus scrape each read
// every circuit's event log, so that many callers at once cost one
// reading, not one each. The run is the first caller's, detached from its
// cancellation (the others still wait for it) and bounded by
// sharedReadTimeout; a caller that goes away stops waiting. Results are
// read-only.
func shared[T any](ctx context.Context, g *singleflight.Group, key string, read func(context.Context) (T, error)) (T, error) {
	ch := g.DoChan(key, func() (any, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedReadTimeout)
		defer cancel()
		return read(rctx)
	})
	select {
	case r := <-ch:
		v, _ := r.Val.(T)
		return v, r.Err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
