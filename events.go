package fusebox

import (
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// RecordRetry returns p as an event records it.
func RecordRetry(p RetryPolicy) breaker.RetryRecord {
	return breaker.RetryRecord{
		Attempts: p.Attempts, Timeout: breaker.Duration(p.Timeout), Deadline: breaker.Duration(p.Deadline),
		Backoff: breaker.Duration(p.Backoff.First), Multiplier: p.Backoff.Multiplier, MaxDelay: breaker.Duration(p.Backoff.Max), Jitter: string(p.Backoff.Jitter),
	}
}

// RecordedRetry returns the retry policy r records (zero fields mean
// defaults).
func RecordedRetry(r breaker.RetryRecord) RetryPolicy {
	return RetryPolicy{
		Attempts: r.Attempts, Timeout: time.Duration(r.Timeout), Deadline: time.Duration(r.Deadline),
		Backoff: Backoff{First: time.Duration(r.Backoff), Multiplier: r.Multiplier, Max: time.Duration(r.MaxDelay), Jitter: Jitter(r.Jitter)},
	}
}

// stampRetry sets Retry on the transitions among events to p, the policy of
// the call that made them.
func stampRetry(events []breaker.Event, p RetryPolicy) {
	for i := range events {
		if events[i].Kind == breaker.EventTransition {
			events[i].Retry = RecordRetry(p)
		}
	}
}
