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

// stamp sets, on the transitions among events, the circuit's skip total
// read just before they were made (breaker.Event.Skips), and the retry
// policy of the call that made them: the zero record for a trip, reset or
// watch, which no call made.
func stamp(events []breaker.Event, skips uint64, retry breaker.RetryRecord) {
	for i := range events {
		if events[i].Kind == breaker.EventTransition {
			events[i].Skips, events[i].Retry = skips, retry
		}
	}
}
