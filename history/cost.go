package history

import (
	"time"

	"github.com/fusebox-hq/fusebox"
)

// SkipCost estimates the time one skipped call would have spent had it run
// against the endpoint while it was down: every attempt the policy allows,
// each sitting through the attempt timeout for the share timedOut (0..1) of
// the failures seen that a timeout cut short (the others failed at once,
// counted as no time), with the mean backoff wait between attempts, all
// capped by the call's deadline.
func SkipCost(p fusebox.Policy, timedOut float64) time.Duration {
	p = p.WithDefaults()
	r := p.Retry
	timedOut = min(max(timedOut, 0), 1)
	attempt := time.Duration(float64(r.Timeout) * timedOut)
	total := attempt
	prev := time.Duration(0)
	for a := 1; a < r.Attempts && total < r.Deadline; a++ {
		prev = meanDelay(r.Backoff, a, prev)
		total += prev + attempt
	}
	return min(total, r.Deadline)
}

// meanDelay is the mean of Backoff.Delay(attempt, prev, draw) over draws
// uniform in [0, 1): it is linear in the draw, so the mean is the delay at
// the middle draw.
func meanDelay(b fusebox.Backoff, attempt int, prev time.Duration) time.Duration {
	return b.Delay(attempt, prev, 0.5)
}
