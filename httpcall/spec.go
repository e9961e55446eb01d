package httpcall

import (
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/redirect"
)

// DefaultMaxBody caps a response body unless an endpoint sets MaxBody.
const DefaultMaxBody = 10 << 20

// Endpoint is one HTTP endpoint: a circuit with an http: block in the
// config, as httpcall.New takes it.
// Values are already expanded (${VAR}, ${file:...}, !secret); Secrets lists
// the expanded values that must never be shown.
type Endpoint struct {
	Name        string
	URL         string
	Method      string            // default GET
	Headers     map[string]string // sent as given
	Body        string
	RetryOn     RetryOn
	TripOn4xx   bool // a 4xx other than 429 counts against the breaker
	RetryUnsafe bool // retry POST/PATCH even after the request may have reached the server
	Expect      Expect
	Extract     JQ            // printed instead of the raw body
	MaxBody     int64         // 0: DefaultMaxBody
	Fresh       time.Duration // answer from the stored response while younger than this
	Stale       time.Duration // serve the stored response when the call fails, while younger than this
	Policy      fusebox.Policy
	Secrets     []string
	Redirects   redirect.Policy // which redirects are followed; "" is redirect.SameHost. A redirect not followed is a failure, not retried, unless expect.status accepts the 3xx

	// What a caller of the daemon (fusebox serve) may add to a call, each
	// off by default (see httpcall.CallOptions).
	PassQuery    bool // the caller's query parameters are added to the URL's
	PassBody     bool // the caller's body replaces Body
	AllowSubpath bool // the caller may name a path below the URL's path
	MaxInFlight  int  // calls in flight at once through the daemon; 0: no limit

	// Health, when set, has the daemon probe the endpoint's open circuit
	// itself (see Health).
	Health *Health
}

// DefaultHealthInterval is how often the daemon looks at a circuit with a
// health check unless Health.Interval says otherwise.
const DefaultHealthInterval = 30 * time.Second

// Health is an endpoint's active health check: every Interval, fusebox serve
// looks at the endpoint's circuit and, once the breaker lets a probe through
// (the circuit is half-open), probes it with a GET of Path on the endpoint's
// host (with its headers), or with the endpoint's own request when Path is
// empty, judged by Expect (empty: the endpoint's own), so that the circuit
// closes without waiting for a caller.
type Health struct {
	Path     string        // absolute path, with an optional query; "": the endpoint itself
	Interval time.Duration // 0: DefaultHealthInterval
	Expect   Expect
}

// RetryOn says which failures are retried. The zero value retries nothing;
// DefaultRetryOn returns connect, timeout, 5xx and 429. Failures of the local
// network are always retried, 401 and 403 never.
type RetryOn struct {
	Connect         bool  // refused, DNS failure, reset
	Timeout         bool  // no answer within the attempt timeout
	ServerErrors    bool  // any 5xx
	TooManyRequests bool  // 429
	Codes           []int // explicit status codes
}

// DefaultRetryOn retries what is usually passing: connection failures,
// timeouts, 5xx and 429.
func DefaultRetryOn() RetryOn {
	return RetryOn{Connect: true, Timeout: true, ServerErrors: true, TooManyRequests: true}
}

// Expect says what a good response looks like.
type Expect struct {
	Status []int // accepted status codes; empty means any 2xx
	JQ     JQ    // optional condition on the JSON body, true when good
}

// Chain is an ordered list of endpoints tried in turn, with one deadline.
type Chain struct {
	Name      string
	Endpoints []string
	Fresh     time.Duration // answer from the stored response while younger than this
	Stale     time.Duration // serve the stored response when every endpoint fails, while younger than this
	Deadline  time.Duration // for the whole chain; 0: the sum of the endpoints' deadlines
	// Hedge, when set, starts the next endpoint beside the one being tried
	// once that one has gone Hedge without an answer (its retries
	// included); the first answer wins and the others are cancelled, which
	// counts against none of their circuits. 0: one endpoint at a time. It
	// must be shorter than the chain's deadline (TotalDeadline).
	Hedge time.Duration
}

// TotalDeadline returns the chain's deadline: Deadline, or when that is 0,
// the sum of its endpoints' deadlines, each from policy(name) (zero fields
// read as the built-in defaults).
func (ch *Chain) TotalDeadline(policy func(name string) fusebox.Policy) time.Duration {
	if ch.Deadline > 0 {
		return ch.Deadline
	}
	var d time.Duration
	for _, n := range ch.Endpoints {
		e := policy(n).WithDefaults().Retry.Deadline
		if d > fusebox.NoDeadline-e {
			return fusebox.NoDeadline // an endpoint without a deadline
		}
		d += e
	}
	return d
}

// Longest returns the longest a call of e can take: its policy's longest
// call (fusebox.RetryPolicy.Longest) or, when it retries, its deadline,
// since a server's Retry-After may stretch every wait up to that.
func (e *Endpoint) Longest() time.Duration { return longestCall(e.Policy) }

func longestCall(p fusebox.Policy) time.Duration {
	r := p.WithDefaults().Retry
	d, _ := r.Longest()
	if r.Attempts > 1 {
		return r.Deadline // fusebox.NoDeadline: no bound at all
	}
	return d
}

// Longest returns the longest a call of the chain can take, each endpoint
// under policy(name): its deadline (TotalDeadline), or the sum of its
// endpoints' longest calls when that is shorter.
func (ch *Chain) Longest(policy func(name string) fusebox.Policy) time.Duration {
	var sum time.Duration
	for _, n := range ch.Endpoints {
		d := longestCall(policy(n))
		if sum > fusebox.NoDeadline-d {
			sum = fusebox.NoDeadline
			break
		}
		sum += d
	}
	return min(ch.TotalDeadline(policy), sum)
}
