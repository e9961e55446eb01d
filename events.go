package fusebox

import "github.com/fusebox-hq/fusebox/breaker"

// recordRetry returns p as an event records it; package history reads it
// back.
func recordRetry(p RetryPolicy) breaker.RetryRecord {
	return breaker.RetryRecord{
		Attempts: p.Attempts, Timeout: breaker.Duration(p.Timeout), Deadline: breaker.Duration(p.Deadline),
		Backoff: breaker.Duration(p.Backoff.First), Multiplier: p.Backoff.Multiplier, MaxDelay: breaker.Duration(p.Backoff.Max), Jitter: string(p.Backoff.Jitter),
	}
}

// stampRetry sets Retry on the transitions among events to p, the policy of
// the call that made them.
func stampRetry(events []breaker.Event, p RetryPolicy) {
	for i := range events {
		if events[i].Kind == breaker.EventTransition {
			events[i].Retry = recordRetry(p)
		}
	}
}
