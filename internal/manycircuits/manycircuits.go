// Package manycircuits fills a store with many circuits, as a household
// with many devices has them: what the benchmarks of a large state dir
// (cmd/fusebox's BenchmarkAtScale, the bench module's hourly-GC run) time
// fusebox on.
package manycircuits

import (
	"context"
	"fmt"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
)

// Name is the name of circuit i: "circuit-00042".
func Name(i int) string { return fmt.Sprintf("circuit-%05d", i) }

// Write gives circuits 0 to n-1 of s each a state (one failure at now), its
// event and counts, in the store's own format.
func Write(ctx context.Context, s fusebox.Store, n int, now time.Time) error {
	for i := range n {
		name := Name(i)
		at := now
		fail := breaker.Event{Time: at, Circuit: name, Kind: breaker.EventFailure, Attempt: 1, Reason: "connect: connection refused"}
		if _, err := s.Update(ctx, name, func(st *breaker.State) ([]breaker.Event, bool) {
			st.ConsecutiveFailures, st.LastFailureAt, st.LastFailure = 1, at, fail.Reason
			return []breaker.Event{fail}, true
		}); err != nil {
			return fmt.Errorf("write circuit %s: %w", name, err)
		}
		if err := s.Count(ctx, name, fusebox.Counts{Successes: 100, Failures: 1}); err != nil {
			return fmt.Errorf("count circuit %s: %w", name, err)
		}
	}
	return nil
}
