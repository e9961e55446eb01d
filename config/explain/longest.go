package explain

import (
	"fmt"
	"strings"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/internal/human"
)

// Longest is the longest a run or call of a name can take, and where that
// comes from.
type Longest struct {
	Seconds float64 `json:"seconds"`
	From    string  `json:"from"`
	// ServeSeconds is the longest fusebox serve takes over a call of the
	// name for a caller that sends no X-Fusebox-Wait (Request.ServeBudget);
	// 0 for a circuit that is no endpoint or chain.
	ServeSeconds float64 `json:"serve_seconds,omitempty"`
}

// longestCall says how long a call under p takes at most; http says it
// is an endpoint's, whose server may send Retry-After (a command cannot).
func longestCall(p fusebox.Policy, http bool) Longest {
	r := p.WithDefaults().Retry
	d, capped := r.Longest()
	if capped {
		return Longest{Seconds: d.Seconds(), From: "its deadline of " + round(d)}
	}
	from := fmt.Sprintf("%d × its %s timeout", r.Attempts, round(r.Timeout))
	if r.Attempts == 1 {
		from = "one attempt of its " + round(r.Timeout) + " timeout"
	}
	if r.Attempts > 1 {
		var waits []string
		var prev time.Duration
		for a := 1; a < r.Attempts && a <= 3; a++ {
			w := r.Backoff.Delay(a, prev, 1)
			waits, prev = append(waits, round(w)), w
		}
		if r.Attempts > 4 {
			waits = append(waits, "…")
		}
		from += " + waits of up to " + strings.Join(waits, ", ")
		if http && r.Deadline != fusebox.NoDeadline {
			from += fmt.Sprintf("; a server's Retry-After may stretch a wait, up to its %s deadline", round(r.Deadline))
		}
	}
	return Longest{Seconds: d.Seconds(), From: from}
}

// longestChain says how long a call of ch takes at most, each endpoint
// under policy.
func longestChain(ch *httpcall.Chain, policy func(string) fusebox.Policy) Longest {
	d, total := ch.Longest(policy), ch.TotalDeadline(policy)
	if d < total {
		return Longest{Seconds: d.Seconds(), From: "its endpoints' longest calls, one after the other"}
	}
	from := "the chain's deadline of " + round(d)
	if ch.Deadline == 0 {
		from = "the chain's deadline of " + round(d) + ", its endpoints' deadlines added up (no deadline: of its own)"
	}
	if ch.Hedge > 0 {
		return Longest{Seconds: d.Seconds(), From: from + ", which ends its hedged endpoints"}
	}
	return Longest{Seconds: d.Seconds(), From: from + ", shared: each endpoint has what is left divided by the endpoints still to try"}
}

// served sets l's ServeSeconds: own, the longest call, or the daemon's
// budget for a caller that declares no wait when that comes first.
func (l *Longest) served(own, budget time.Duration) {
	if budget > 0 {
		l.ServeSeconds = min(own, budget).Seconds()
	}
}

func round(d time.Duration) string {
	if d == fusebox.NoDeadline {
		return "unbounded"
	}
	return human.Round(d).String()
}
