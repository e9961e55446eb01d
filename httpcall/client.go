// Package httpcall calls HTTP endpoints for scripts: each attempt runs under
// the endpoint's persistent circuit breaker (fusebox.Circuits.Do), responses
// are checked (status, a jq condition) and reduced (a jq extraction), and
// chains of endpoints fall back in order (or, with a hedge, start the next
// beside a slow one and take the first answer), answering from a stored
// response when it is fresh enough or, when everything failed, stale but not
// too old.
//
// Nothing secret is logged or returned in an error: a Redactor built from
// every endpoint's secrets, credential-looking headers and query parameters
// filters the logger and every failure reason.
package httpcall

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/redact"
	"github.com/fusebox-hq/fusebox/redirect"
)

// Client calls the endpoints and chains it was made with. It is safe for
// concurrent use.
type Client struct {
	circuits *fusebox.Circuits
	answers  answers.Store // nil when the store keeps none: no endpoint has fresh or stale
	clock    fusebox.Clock
	log      *slog.Logger
	red      *redact.Redactor
	http     *http.Client
	// answerLevel is the level of the line saying who answered a call.
	answerLevel slog.Level
	jqMemory    *JQMemory   // what its jq programs may use at once
	bodyMemory  *BodyMemory // what its attempts' bodies may hold at once; nil: no bound
	endpoints   map[string]*endpoint
	chains      map[string]*Chain
}

// endpoint is an Endpoint checked and compiled by New.
type endpoint struct {
	Endpoint
	parsed  *url.URL    // URL, parsed once for the requests that add parts to it
	alone   []*endpoint // just this one: the endpoints a call of it tries
	expect  *jqProgram
	extract *jqProgram
	policy  fusebox.Policy
	http    *http.Client // the Client's, with ep's redirect policy
}

// Option configures a Client.
type Option func(*settings)

type settings struct {
	logger        *slog.Logger
	clock         fusebox.Clock
	httpClient    *http.Client
	transport     http.RoundTripper
	redactor      *redact.Redactor
	listeners     []func(breaker.Event)
	syncListeners []func(breaker.Event)
	answers       *slog.Level
	jqMemory      *JQMemory
	bodyMemory    *BodyMemory
}

// WithLogger logs calls, attempts, skips and circuit transitions to l, through
// the Client's Redactor (default: nowhere).
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.logger = l } }

// WithClock sets the clock of the breakers and of stored answers' ages
// (default fusebox.WallClock).
func WithClock(c fusebox.Clock) Option { return func(s *settings) { s.clock = c } }

// WithHTTPClient makes requests with a copy of hc. Per-attempt timeouts come
// from the request's context, so hc needs no Timeout; each endpoint's
// Redirects replaces hc's CheckRedirect.
func WithHTTPClient(hc *http.Client) Option { return func(s *settings) { s.httpClient = hc } }

// WithTransport makes requests through rt (with WithHTTPClient too, rt
// replaces that client's Transport).
func WithTransport(rt http.RoundTripper) Option { return func(s *settings) { s.transport = rt } }

// WithListener has every failure, transition, success and skip of the
// Client's circuits reported to fn (see fusebox.WithListener).
func WithListener(fn func(breaker.Event)) Option {
	return func(s *settings) { s.listeners = append(s.listeners, fn) }
}

// WithSyncListener has every event reported to fn on the goroutine of the
// call it comes from (see fusebox.WithSyncListener): fn must be quick and
// never block.
func WithSyncListener(fn func(breaker.Event)) Option {
	return func(s *settings) { s.syncListeners = append(s.syncListeners, fn) }
}

// WithAnswerLevel logs the line saying which endpoint answered a call (or
// that a stored answer did) at level l rather than slog.LevelInfo: a daemon
// answering many calls logs failures, skips and transitions, not each
// success.
func WithAnswerLevel(l slog.Level) Option { return func(s *settings) { s.answers = &l } }

// WithRedactor adds r's secrets to those the Client hides.
func WithRedactor(r *redact.Redactor) Option { return func(s *settings) { s.redactor = r } }

// New checks and compiles endpoints and chains, reporting every problem at
// once, each naming its endpoint or chain, and returns a Client whose
// breakers live in store. An endpoint's circuit uses its Policy; any other
// name gets the default policy (fusebox.Policy{}.WithDefaults()). Fresh and
// stale answers are kept in store, which must then be a answers.Store too.
func New(store fusebox.Store, endpoints []*Endpoint, chains []*Chain, opts ...Option) (*Client, error) {
	if store == nil {
		return nil, errors.New("httpcall: no store")
	}
	s := settings{clock: fusebox.WallClock{}}
	for _, o := range opts {
		o(&s)
	}
	answers, _ := store.(answers.Store)
	c := &Client{
		answers:   answers,
		clock:     s.clock,
		red:       s.redactor.With(secretsOf(endpoints)...),
		endpoints: map[string]*endpoint{},
		chains:    map[string]*Chain{},
	}
	var errs []error
	declared := map[string]bool{}
	for _, e := range endpoints {
		if e != nil {
			declared[e.Name] = true
		}
	}
	for _, e := range endpoints {
		ep, err := c.compile(e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.endpoints[ep.Name] = ep
	}
	for _, ch := range chains {
		if err := c.checkChain(ch, declared); err != nil {
			errs = append(errs, err)
			continue
		}
		cp := *ch
		cp.Endpoints = slices.Clone(ch.Endpoints)
		c.chains[ch.Name] = &cp
	}
	if answers == nil && keepsAnswers(endpoints, chains) {
		errs = append(errs, fmt.Errorf("fresh and stale need a store that keeps answers, and %T keeps none", store))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	base := s.logger
	if base == nil {
		base = slog.New(slog.DiscardHandler)
	}
	c.log = slog.New(c.red.Handler(base.Handler()))
	c.answerLevel = slog.LevelInfo
	c.jqMemory = s.jqMemory
	c.bodyMemory = s.bodyMemory
	if c.jqMemory == nil {
		c.jqMemory = NewJQMemory(DefaultJQMemory)
	}
	if s.answers != nil {
		c.answerLevel = *s.answers
	}
	copts := []fusebox.Option{fusebox.WithPolicies(c.Policy), fusebox.WithClock(s.clock), fusebox.WithLogger(c.log)}
	for _, fn := range s.listeners {
		copts = append(copts, fusebox.WithListener(fn))
	}
	for _, fn := range s.syncListeners {
		copts = append(copts, fusebox.WithSyncListener(fn))
	}
	c.circuits = fusebox.New(store, copts...)

	c.http = &http.Client{}
	if s.httpClient != nil {
		hc := *s.httpClient
		c.http = &hc
	}
	switch {
	case s.transport != nil:
		c.http.Transport = s.transport
	case c.http.Transport == nil:
		c.http.Transport = NewTransport()
	}
	for _, ep := range c.endpoints {
		hc := *c.http
		hc.CheckRedirect = ep.checkRedirect
		ep.http = &hc
	}
	return c, nil
}

// MaxResponseHeader bounds the header of an upstream's answer, which is
// held whole before anything else of the answer is read, where no body
// budget counts it (Go's own bound is 10 MB an answer). Answers' headers
// are small: nginx reads an upstream's into 4 or 8 KiB.
const MaxResponseHeader = 64 << 10

// NewTransport returns what a Client calls through unless it is given
// another (WithTransport, WithHTTPClient): Go's default transport, proxies
// from the environment and HTTP/2 over TLS, with an upstream's header
// bounded by MaxResponseHeader.
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxResponseHeaderBytes = MaxResponseHeader
	return t
}

// Circuits returns the breakers the Client runs its endpoints under.
func (c *Client) Circuits() *fusebox.Circuits { return c.circuits }

// Redactor returns the Redactor that hides the endpoints' secrets.
func (c *Client) Redactor() *redact.Redactor { return c.red }

// CloseIdleConnections closes the idle connections of the Client's HTTP
// transport.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// Policy returns the policy of the named circuit, its defaults filled in:
// its endpoint's, or for any other name the default policy.
func (c *Client) Policy(name string) fusebox.Policy {
	if ep, ok := c.endpoints[name]; ok {
		return ep.policy
	}
	return fusebox.Policy{}.WithDefaults()
}

func keepsAnswers(endpoints []*Endpoint, chains []*Chain) bool {
	for _, e := range endpoints {
		if e != nil && (e.Fresh > 0 || e.Stale > 0) {
			return true
		}
	}
	for _, ch := range chains {
		if ch != nil && (ch.Fresh > 0 || ch.Stale > 0) {
			return true
		}
	}
	return false
}

// secretsOf collects what must never be shown: each endpoint's Secrets, the
// values of credential-looking headers (and the token after "Bearer "), and
// the values of credential-looking query parameters and URL passwords.
func secretsOf(endpoints []*Endpoint) []string {
	var out []string
	for _, e := range endpoints {
		out = append(out, e.Secrets...)
		for k, v := range e.Headers {
			if redact.IsSecretName(k) {
				out = append(out, v)
				if _, token, ok := strings.Cut(v, " "); ok {
					out = append(out, strings.TrimSpace(token))
				}
			}
		}
		u, err := url.Parse(e.URL)
		if err != nil {
			continue
		}
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
		for _, part := range strings.Split(u.RawQuery, "&") {
			name, value, _ := strings.Cut(part, "=")
			if n, err := url.QueryUnescape(name); err == nil && redact.IsSecretName(n) {
				out = append(out, value)
				if v, err := url.QueryUnescape(value); err == nil {
					out = append(out, v)
				}
			}
		}
	}
	return out
}

// compile checks e and compiles its jq programs.
func (c *Client) compile(e *Endpoint) (*endpoint, error) {
	if e == nil {
		return nil, errors.New("endpoint: nil")
	}
	ep := &endpoint{Endpoint: *e, policy: e.Policy.WithDefaults()}
	ep.alone = []*endpoint{ep}
	ep.Headers = maps.Clone(e.Headers)
	ep.Secrets = slices.Clone(e.Secrets)
	ep.Expect.Status = slices.Clone(e.Expect.Status)
	ep.RetryOn.Codes = slices.Clone(e.RetryOn.Codes)
	ep.Method = strings.ToUpper(strings.TrimSpace(e.Method))
	if ep.Method == "" {
		ep.Method = http.MethodGet
	}
	if ep.MaxBody == 0 {
		ep.MaxBody = DefaultMaxBody
	}

	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if err := fusebox.ValidateName(e.Name); err != nil {
		bad("%v", err)
	}
	if _, dup := c.endpoints[e.Name]; dup {
		bad("defined twice")
	}
	if u, err := url.Parse(e.URL); err != nil {
		bad("url %s is not a valid URL", c.red.URL(e.URL))
	} else if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		bad("url %s: want http:// or https:// and a host", c.red.URL(e.URL))
	} else {
		ep.parsed = u
	}
	if ep.Redirects != "" && !slices.Contains(redirect.Policies, ep.Redirects) {
		bad("redirects %q: want one of %s", e.Redirects, joinPolicies())
	}
	if !validMethod(ep.Method) {
		bad("method %q is not an HTTP method", e.Method)
	}
	if err := e.Policy.Validate(); err != nil {
		bad("%s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if e.MaxBody < 0 {
		bad("max_body must not be negative, got %d", e.MaxBody)
	}
	if e.Fresh < 0 || e.Stale < 0 {
		bad("fresh and stale must not be negative")
	}
	for _, code := range slices.Concat(e.Expect.Status, e.RetryOn.Codes) {
		if code < 100 || code > 599 {
			bad("status code %d is not between 100 and 599", code)
		}
	}
	var err error
	if ep.expect, err = e.Expect.JQ.program(); err != nil {
		bad("expect.jq: %v", err)
	}
	if ep.extract, err = e.Extract.program(); err != nil {
		bad("extract: %v", err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("endpoint %s: %s", e.Name, c.red.String(strings.Join(errs, "; ")))
	}
	return ep, nil
}

func (c *Client) checkChain(ch *Chain, endpoints map[string]bool) error {
	if ch == nil {
		return errors.New("chain: nil")
	}
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if err := fusebox.ValidateName(ch.Name); err != nil {
		bad("%v", err)
	}
	if _, dup := c.chains[ch.Name]; dup {
		bad("defined twice")
	}
	if endpoints[ch.Name] {
		bad("an endpoint has the same name")
	}
	if len(ch.Endpoints) == 0 {
		bad("no endpoints")
	}
	for i, name := range ch.Endpoints {
		if !endpoints[name] {
			bad("no endpoint named %q", name)
		}
		if slices.Index(ch.Endpoints, name) < i {
			bad("endpoint %q listed twice", name)
		}
	}
	if ch.Fresh < 0 || ch.Stale < 0 || ch.Deadline < 0 || ch.Hedge < 0 {
		bad("fresh, stale, deadline and hedge must not be negative")
	}
	if ch.Hedge > 0 && len(ch.Endpoints) < 2 {
		bad("hedge needs two endpoints or more: it starts the next one beside the one being tried")
	}
	if dl := ch.TotalDeadline(c.Policy); ch.Hedge > 0 && ch.Hedge >= dl {
		bad("hedge (%s) must be shorter than the chain's deadline (%s)", ch.Hedge, dl)
	}
	if len(errs) > 0 {
		return fmt.Errorf("chain %s: %s", ch.Name, c.red.String(strings.Join(errs, "; ")))
	}
	return nil
}

func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		if m[i] < 'A' || m[i] > 'Z' {
			return false
		}
	}
	return true
}

// storeTimeout bounds a store operation made after the call's own deadline.
const storeTimeout = 5 * time.Second

// storeContext is ctx without its cancellation, for a stored answer's read
// or write, which goes on after the call's deadline: for storeTimeout, and,
// with a grace, no later than that long past ctx's deadline.
func storeContext(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	end := time.Now().Add(storeTimeout)
	if dl, ok := ctx.Deadline(); ok && grace > 0 && dl.Add(grace).Before(end) {
		end = dl.Add(grace)
	}
	return context.WithDeadline(context.WithoutCancel(ctx), end)
}
