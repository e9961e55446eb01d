package serve

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/fusebox-hq/fusebox/internal/human"
)

// A caller says how long it waits for its answer in a request header or a
// query parameter (for callers that can set neither headers nor a timeout
// of their own, a URL is all there is). The daemon answers within that
// wait, less a margin for the answer to reach it: with the best answer it
// has by then, or a 503 with Retry-After, never after the caller gave up.
const (
	HeaderWait = "X-Fusebox-Wait" // "30" (seconds), "2.5", "2500ms", "30s"
	QueryWait  = "fusebox_wait"   // the same, in the query; never passed upstream
)

// DefaultWait is how long the daemon takes a caller that declares no wait
// to wait: below the 30s that Node-RED's node, the n8n example and Home
// Assistant's recipes give a call, so none of them times out first.
const DefaultWait = 25 * time.Second

// maxWait caps a declared wait: a call's own deadline ends it long before.
const maxWait = 24 * time.Hour

// callerWait returns how long r's caller waits: X-Fusebox-Wait or the
// fusebox_wait parameter of q (the sooner when both are given), else def.
// An error names a value that is not a wait.
func callerWait(r *http.Request, q url.Values, def time.Duration) (time.Duration, error) {
	wait, given := maxWait, false
	for _, src := range [...]struct{ what, v string }{
		{HeaderWait, r.Header.Get(HeaderWait)},
		{QueryWait, q.Get(QueryWait)},
	} {
		if src.v == "" {
			continue
		}
		d, err := parseWait(src.v)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", src.what, err)
		}
		wait, given = min(wait, d), true
	}
	if !given {
		return def, nil
	}
	return wait, nil
}

// parseWait reads a wait: a number of seconds, or a duration with its unit.
func parseWait(v string) (time.Duration, error) {
	var d time.Duration
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if !(s > 0) || math.IsInf(s, 0) {
			return 0, fmt.Errorf("want a wait of more than 0 seconds, got %q", v)
		}
		d = time.Duration(min(s, maxWait.Seconds()) * float64(time.Second))
	} else if d, err = human.ParseDuration(v); err != nil {
		return 0, fmt.Errorf("want seconds (30) or a duration (2500ms, 30s), got %q", v)
	}
	if d <= 0 {
		return 0, fmt.Errorf("want a wait of more than 0 seconds, got %q", v)
	}
	return min(d, maxWait), nil
}

// CallBudget returns the time a call gets of its caller's wait: the wait
// less a margin for the answer to be written and read, a tenth of it and
// at most a second.
func CallBudget(wait time.Duration) time.Duration {
	return wait - min(wait/10, time.Second)
}

// answerBy returns when, after the request came, its answer is written
// whatever the call or a store is doing: the call has CallBudget, a stale
// answer read after it half the margin more (httpcall.CallOptions.StoreGrace),
// the answer's own reads (Retry-After) a quarter, and the last quarter
// writes it.
func answerBy(wait time.Duration) time.Duration {
	return wait - min(wait/10, time.Second)/4
}
