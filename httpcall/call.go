package httpcall

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/human"
)

// Sources of a Result answered from the stored response rather than by an
// endpoint.
const (
	SourceFresh = "fresh"
	SourceStale = "stale"
)

// Errors a failed Call matches with errors.Is.
var (
	// ErrAllFailed: every endpoint failed (some may have been skipped).
	ErrAllFailed = errors.New("every endpoint failed")
	// ErrAllSkipped: every endpoint was skipped, its circuit open; no
	// request was made.
	ErrAllSkipped = errors.New("every circuit is open")
	// ErrUnknown: no endpoint or chain has the name.
	ErrUnknown = errors.New("no such endpoint or chain")
	// ErrNotAllowed: a CallOptions request part the endpoint's config does
	// not allow, or one that would leave its URL.
	ErrNotAllowed = errors.New("not allowed by the endpoint's config")
)

// CallOptions adjust one Call.
type CallOptions struct {
	NoStale bool // fail rather than serve a stale stored answer
	NoFresh bool // call even when a fresh stored answer exists

	// Parts of one request, from a caller of the daemon. Each needs its
	// endpoint's leave (AllowSubpath, PassQuery, PassBody), or Call fails
	// with ErrNotAllowed; chains take none. A call with any of them neither
	// uses nor keeps stored answers, which are the endpoint's, not the
	// request's.
	Subpath string     // a path below the endpoint URL's: "api/states/sensor.x"
	Query   url.Values // added to the URL's query; a parameter the URL has already is refused
	Body    []byte     // replaces the endpoint's body; nil keeps it

	// Probe makes the call a health check (fusebox.Circuits.Probe): one
	// attempt per endpoint, which may probe an open circuit before its open
	// period ends and closes it on success.
	Probe bool

	// BeforeRequest, when set, runs before every attempt's request, on the
	// goroutine of Call: fusebox call watches for signals only from there
	// on (runner.LazyInterrupt), so a call that every open circuit or a
	// stored answer ends first pays nothing for them. In a chain with a
	// Hedge it runs on the goroutine of each endpoint's attempts, so it
	// must be safe for concurrent use there.
	BeforeRequest func()

	// StoreGrace bounds how far past ctx's deadline reading or keeping a
	// stored answer may go: the daemon's caller waits its budget and this
	// much more, so a stale answer read after every endpoint ran out the
	// budget still reaches it. 0: such a read or write may take 5s.
	StoreGrace time.Duration
}

// personal reports whether o names parts of one request.
func (o CallOptions) personal() bool { return o.Subpath != "" || len(o.Query) > 0 || o.Body != nil }

// Result is the answer to a Call, or, with a *CallError, what was tried.
type Result struct {
	Source   string        // the endpoint that answered, or SourceFresh or SourceStale
	Answered string        // the endpoint whose response this is (for fresh and stale, the stored one's)
	Status   int           // its HTTP status
	Attempts int           // attempts made in this call, over all endpoints
	Age      time.Duration // for fresh and stale: how old the stored answer is
	Body     []byte        // the extraction, or the raw body
	// Header holds the response's headers when an endpoint answered with its
	// raw body in this call; nil for an extraction and for stored answers.
	Header http.Header
	Errors []EndpointError
}

// EndpointError says why an endpoint did not answer.
type EndpointError struct {
	Name    string
	Reason  string // redacted
	Skipped bool   // its circuit was open: no request was made
	// Cancelled: a hedge (Chain.Hedge) whose call was cancelled, or whose
	// answer came too late, because another endpoint answered first. It
	// counts against none of its circuit's breaker. Only an answered call
	// lists one.
	Cancelled bool
	// Reopened: it was the probe of a half-open circuit, whose failure
	// opened the circuit again (see fusebox.ExhaustedError.Reopened).
	Reopened bool
	// Overtaken: another call's failure opened its circuit while this one
	// ran or waited to retry (see fusebox.ExhaustedError.Overtaken).
	Overtaken bool
}

// CallError is returned when no endpoint answered and no stored answer could
// stand in. It matches ErrAllSkipped when every circuit was open, and
// ErrAllFailed otherwise.
type CallError struct {
	Name       string // the endpoint or chain called
	Errors     []EndpointError
	AllSkipped bool
}

func (e *CallError) Error() string {
	if len(e.Errors) == 1 && e.Errors[0].Name == e.Name {
		return e.Name + ": " + e.Errors[0].Reason
	}
	what := ErrAllFailed.Error()
	if e.AllSkipped {
		what = ErrAllSkipped.Error()
	}
	parts := make([]string, len(e.Errors))
	for i, ee := range e.Errors {
		parts[i] = ee.Name + ": " + ee.Reason
	}
	return fmt.Sprintf("%s: %s (%s)", e.Name, what, strings.Join(parts, "; "))
}

// Told reports whether the outage behind e was already told: every endpoint
// was skipped, failed as the probe of a circuit it opened again, or failed
// after another call's failure had opened its circuit. A front end logs such
// a failure below the level people see by default.
func (e *CallError) Told() bool {
	for _, ee := range e.Errors {
		if !ee.Skipped && !ee.Reopened && !ee.Overtaken {
			return false
		}
	}
	return true
}

// Is makes errors.Is match ErrAllSkipped or ErrAllFailed.
func (e *CallError) Is(target error) bool {
	return target == ErrAllSkipped && e.AllSkipped || target == ErrAllFailed && !e.AllSkipped
}

// plan is what one Call tries.
type plan struct {
	name      string // the endpoint or chain called, and the key of its stored answer
	endpoints []*endpoint
	fresh     time.Duration
	stale     time.Duration
	deadline  time.Duration // 0: each endpoint's own
	// limit names the deadline the call runs under, for the reasons of
	// the endpoints it cut: "chain deadline of 20s", "caller's deadline".
	limit string
	hedge time.Duration // start the next endpoint beside one not answered within this; 0: one at a time
	log   *slog.Logger
	parts *parts        // the request's own URL and body; nil: the endpoint's
	grace time.Duration // CallOptions.StoreGrace
}

// Call calls the named endpoint, or tries the named chain's endpoints in
// order until one answers. An endpoint whose circuit is open is skipped at
// once. A chain with a Hedge also starts the next endpoint beside one that
// has not answered within it, takes the first answer, and cancels the rest
// (see Chain.Hedge); its Result lists each cancelled one with Cancelled.
//
// A stored answer younger than the endpoint's or chain's Fresh answers
// without any request; one younger than Stale answers when every endpoint
// failed or was skipped (unless opt.NoStale). A good answer is stored only
// when Fresh or Stale is set.
//
// When nothing answered, Call returns a *CallError and a Result holding the
// errors and the attempts made; when ctx is cancelled, ctx's error and the
// same.
func (c *Client) Call(ctx context.Context, name string, opt CallOptions) (*Result, error) {
	var p plan
	if ep, ok := c.endpoints[name]; ok {
		p = plan{name: name, endpoints: ep.alone, fresh: ep.Fresh, stale: ep.Stale, log: c.log}
		if opt.personal() {
			pp, err := ep.parts(opt)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			p.parts, p.fresh, p.stale = pp, 0, 0
		}
	} else if ch, ok := c.chains[name]; ok {
		if opt.personal() {
			return nil, fmt.Errorf("%s: %w: a chain passes on no path, query or body", name, ErrNotAllowed)
		}
		p = plan{name: name, fresh: ch.Fresh, stale: ch.Stale, deadline: ch.TotalDeadline(c.Policy), hedge: ch.Hedge, log: c.log.With("chain", name)}
		for _, n := range ch.Endpoints {
			p.endpoints = append(p.endpoints, c.endpoints[n])
		}
	} else {
		return nil, fmt.Errorf("%w: %q", ErrUnknown, c.red.String(name))
	}
	p.grace = opt.StoreGrace
	return c.run(ctx, p, opt)
}

func (c *Client) run(ctx context.Context, p plan, opt CallOptions) (*Result, error) {
	if p.fresh > 0 && !opt.NoFresh {
		if res, ok := c.fresh(ctx, p); ok {
			return res, nil
		}
	}
	if p.deadline > 0 {
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < p.deadline {
			p.limit = "caller's deadline" // sooner than the chain's: it is what cuts
		} else {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, p.deadline)
			defer cancel()
			p.limit = "chain deadline of " + human.String(p.deadline)
		}
	}
	if p.fresh <= 0 || opt.NoFresh {
		return c.fetch(ctx, p, opt)
	}
	// Callers that arrive together (six cron jobs in the same second) would
	// each call upstream. One calls; the others wait for its answer and
	// serve it fresh. When the lock cannot be had, each calls anyway.
	var res *Result
	var err error
	lerr := c.answers.Exclusive(ctx, p.name, func() error {
		if r, ok := c.fresh(ctx, p); ok {
			res = r
			return nil
		}
		res, err = c.fetch(ctx, p, opt)
		return nil
	})
	if res == nil {
		p.log.Debug("calling without the answer lock", "err", lerr)
		return c.fetch(ctx, p, opt)
	}
	return res, err
}

// fresh returns the stored answer when it is younger than the plan's fresh.
func (c *Client) fresh(ctx context.Context, p plan) (*Result, bool) {
	a, age, ok := c.stored(ctx, p)
	if !ok || age >= p.fresh {
		return nil, false
	}
	p.log.Log(ctx, c.answerLevel, "answered from the stored response", "from", a.Source, "age", human.String(age))
	return &Result{Source: SourceFresh, Answered: a.Source, Status: a.Status, Age: age, Body: a.Body}, true
}

// fetch calls the plan's endpoints in turn (or, with a hedge, beside each
// other: hedged) and, when none answers, serves a stale answer or fails.
func (c *Client) fetch(ctx context.Context, p plan, opt CallOptions) (*Result, error) {
	if p.hedge > 0 && len(p.endpoints) > 1 {
		return c.hedged(ctx, p, opt)
	}
	res := &Result{}
	for i, ep := range p.endpoints {
		if expired(ctx) {
			if err := ctx.Err(); errors.Is(err, context.Canceled) {
				return res, fmt.Errorf("%s: %w", p.name, err)
			}
			res.Errors = append(res.Errors, notTried(p, ep))
			continue
		}
		var got answer
		before := opt.BeforeRequest
		fn := func(actx context.Context) error {
			if before != nil {
				before()
			}
			res.Attempts++
			a, err := c.attempt(actx, ep, p.parts)
			if err == nil {
				got = a
			}
			return err
		}
		ectx, limit, cancel := p.share(ctx, len(p.endpoints)-i)
		// Called directly, not through a func value: Do and Probe keep no
		// hold of fn, so it and got stay off the heap.
		var err error
		if opt.Probe {
			err = c.circuits.Probe(ectx, ep.Name, fn)
		} else {
			err = c.circuits.Do(ectx, ep.Name, fn)
		}
		cancel()
		switch {
		case err == nil:
			c.answered(ctx, p, ep, got, res)
			return res, nil
		case errors.Is(err, context.Canceled) && ctx.Err() != nil:
			return res, err
		default:
			res.Errors = append(res.Errors, c.endpointError(p, ep, err, limit))
		}
	}
	return c.unanswered(ctx, p, opt, res)
}

// share returns the context an endpoint of a chain runs under when left
// endpoints (itself included) are still to be tried: the time that remains
// of the call's deadline, split evenly between them. An endpoint that hangs
// thus leaves every one after it a turn, and one that fails fast leaves its
// unused time to them. The last endpoint, and a call without a deadline,
// runs under ctx itself. limit names the deadline that cuts the endpoint.
func (p plan) share(ctx context.Context, left int) (_ context.Context, limit string, cancel context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if left <= 1 || !ok {
		return ctx, p.limit, func() {}
	}
	d := time.Until(dl) / time.Duration(left)
	ctx, cancel = context.WithTimeout(ctx, d)
	return ctx, fmt.Sprintf("its %s share of the %s", human.String(d), cmp.Or(p.limit, "caller's deadline")), cancel
}

// answered makes res ep's answer got, and keeps it as the plan's last good
// answer when the plan has fresh or stale.
func (c *Client) answered(ctx context.Context, p plan, ep *endpoint, got answer, res *Result) {
	res.Source, res.Answered, res.Status, res.Body = ep.Name, ep.Name, got.status, got.body
	if !got.extracted {
		res.Header = got.header
	}
	if p.log.Enabled(ctx, c.answerLevel) { // the arguments are made only when it is logged
		p.log.Log(ctx, c.answerLevel, "answered", "endpoint", ep.Name, "status", got.status, "attempts", res.Attempts)
	}
	if p.fresh > 0 || p.stale > 0 {
		c.save(ctx, p, answers.Answer{Source: ep.Name, Status: got.status, StoredAt: c.clock.Now().Wall, Body: got.body})
	}
}

// endpointError says why ep did not answer, from Do's error: a skip of its open
// circuit, or a failure, which is logged.
func (c *Client) endpointError(p plan, ep *endpoint, err error, limit string) EndpointError {
	if errors.Is(err, breaker.ErrOpen) {
		return EndpointError{Name: ep.Name, Reason: openReason(err), Skipped: true}
	}
	reason, reopened, overtaken := err.Error(), false, false
	var ee *fusebox.ExhaustedError
	if errors.As(err, &ee) {
		reopened, overtaken = ee.Reopened, ee.Overtaken
		reason = ee.Describe(limit) // limit names the deadline Do saw as its caller's
	}
	reason = c.red.String(reason)
	p.log.Info("endpoint failed", "endpoint", ep.Name, "reason", reason)
	return EndpointError{Name: ep.Name, Reason: reason, Reopened: reopened, Overtaken: overtaken}
}

// notTried is the error of an endpoint the chain's deadline left no time
// for.
func notTried(p plan, ep *endpoint) EndpointError {
	return EndpointError{Name: ep.Name, Reason: fmt.Sprintf("not tried: %s reached", cmp.Or(p.limit, "deadline"))}
}

// unanswered ends a call no endpoint answered: with a stale answer when
// the plan keeps one young enough (and opt allows it), else a *CallError.
func (c *Client) unanswered(ctx context.Context, p plan, opt CallOptions, res *Result) (*Result, error) {
	if p.stale > 0 && !opt.NoStale {
		if a, age, ok := c.stored(ctx, p); ok && age < p.stale {
			p.log.Info(fmt.Sprintf("serving a stale answer, %s old, from %s", human.String(age), a.Source),
				"age", human.String(age), "from", a.Source)
			res.Source, res.Answered, res.Status, res.Age, res.Body = SourceStale, a.Source, a.Status, age, a.Body
			return res, nil
		}
	}
	cerr := &CallError{Name: p.name, Errors: res.Errors, AllSkipped: true}
	for _, e := range res.Errors {
		cerr.AllSkipped = cerr.AllSkipped && e.Skipped
	}
	return res, cerr
}

// stored returns the stored answer and its age, if there is one of a known
// age. A store that fails is warned about and treated as empty: the call
// goes on without it.
func (c *Client) stored(ctx context.Context, p plan) (answers.Answer, time.Duration, bool) {
	ctx, cancel := storeContext(ctx, p.grace)
	defer cancel()
	a, ok, err := c.answers.LoadAnswer(ctx, p.name)
	if err != nil {
		p.log.Error("cannot read the stored answer", "err", err)
		return a, 0, false
	}
	if !ok {
		return a, 0, false
	}
	age := c.clock.Now().Wall.Sub(a.StoredAt)
	if age < 0 {
		// Stored "in the future": the wall clock has gone back since, and the
		// answer's age is unknown.
		p.log.Debug("ignoring a stored answer of unknown age", "stored_at", a.StoredAt)
		return a, 0, false
	}
	return a, age, true
}

func (c *Client) save(ctx context.Context, p plan, a answers.Answer) {
	ctx, cancel := storeContext(ctx, p.grace)
	defer cancel()
	if err := c.answers.SaveAnswer(ctx, p.name, a); err != nil {
		p.log.Error("cannot store the answer", "err", err)
	}
}

// openReason says briefly why an open circuit was skipped.
func openReason(err error) string {
	var oe *breaker.OpenError
	if !errors.As(err, &oe) {
		return "circuit open"
	}
	switch {
	case oe.Probing:
		return "circuit half-open, another caller is probing it"
	case oe.Phase == breaker.ForcedOpen && oe.ReopensIn == 0:
		return "circuit forced open until reset"
	case oe.Phase == breaker.ForcedOpen:
		return fmt.Sprintf("circuit forced open (closes in %s)", human.String(oe.ReopensIn))
	}
	return fmt.Sprintf("circuit open (probe in %s)", human.String(oe.ReopensIn))
}

// expired reports whether ctx is done or its deadline has passed: a context's
// timer may fire a moment after its deadline, and a chain must not start an
// endpoint in that moment.
func expired(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}
