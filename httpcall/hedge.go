package httpcall

import (
	"context"
	"errors"
	"fmt"
	"github.com/fusebox-hq/fusebox/internal/human"
	"sync/atomic"
	"time"
)

// hedging is one call of a chain with a hedge (Chain.Hedge). It lives on
// the goroutine of Call; each endpoint it starts runs under Do on a
// goroutine of its own, which reports its end on ends.
type hedging struct {
	c        *Client
	p        plan
	opt      CallOptions
	ctx      context.Context // the call's: the chain's deadline, the caller's cancellation
	ends     chan hedgeEnd
	cancels  []context.CancelFunc // by endpoint: each started one's context, a child of ctx
	errs     []*EndpointError     // by endpoint; nil: it answered, or was never started
	attempts atomic.Int64
	started  int // endpoints started or found not tried, in chain order
	running  int // endpoints started whose Do has not ended
	timer    *time.Timer
}

// hedgeEnd is how one endpoint of a hedged chain ended.
type hedgeEnd struct {
	i        int    // the endpoint's place in the chain
	err      error  // Do's
	got      answer // when err is nil
	panicked any    // what its goroutine panicked with, if it did
}

// hedged is fetch for a chain with a hedge. The first endpoint starts at
// once. The next starts when the one started last has gone the hedge
// without an answer, counted from its start (its retries and waits
// included), and at once when it fails or its circuit is open, as without
// a hedge. The first answer wins, and the other endpoints still running are
// cancelled: Do takes a cancelled attempt as neither success nor failure,
// so it counts against no breaker, records no failure event and gives back
// a probe lease it held. hedged returns once every endpoint it started has
// ended, so that what they recorded is in the store. A stale answer is
// served only when every endpoint has failed.
func (c *Client) hedged(ctx context.Context, p plan, opt CallOptions) (*Result, error) {
	n := len(p.endpoints)
	h := &hedging{c: c, p: p, opt: opt, ctx: ctx, ends: make(chan hedgeEnd, n),
		cancels: make([]context.CancelFunc, n), errs: make([]*EndpointError, n), timer: time.NewTimer(p.hedge)}
	defer h.timer.Stop()
	defer h.cancelAll(-1) // every one has ended by then: this frees their contexts
	h.startNext(false)
	winner := -1
	var won answer
	var panicked any
	for h.running > 0 {
		select {
		case e := <-h.ends:
			h.running--
			switch {
			case e.panicked != nil:
				panicked = e.panicked
				h.cancelAll(-1)
			case panicked != nil:
				// The call ends with the panic once every endpoint has.
			case winner >= 0:
				h.lost(e, winner)
			case e.err == nil:
				winner, won = e.i, e.got
				h.cancelAll(winner)
			case errors.Is(e.err, context.Canceled) && ctx.Err() != nil:
				// The caller has gone: every endpoint ends with it.
			default:
				ee := c.endpointError(p, p.endpoints[e.i], e.err, p.limit)
				h.errs[e.i] = &ee
				if e.i == h.started-1 { // the newest: the next starts now
					h.startNext(false)
				}
			}
		case <-h.timer.C:
			if winner < 0 && panicked == nil {
				h.startNext(true)
			}
		}
	}
	if panicked != nil {
		panic(panicked) // on the caller's goroutine, as a call without a hedge would
	}
	res := &Result{Attempts: int(h.attempts.Load())}
	for _, ee := range h.errs {
		if ee != nil {
			res.Errors = append(res.Errors, *ee)
		}
	}
	if winner >= 0 {
		c.answered(ctx, p, p.endpoints[winner], won, res)
		return res, nil
	}
	if err := ctx.Err(); errors.Is(err, context.Canceled) {
		return res, fmt.Errorf("%s: %w", p.name, err)
	}
	return c.unanswered(ctx, p, opt, res)
}

// startNext starts the first endpoint not started yet, if any is left and
// the call goes on; past the chain's deadline, it and the ones after it are
// not tried. hedge says the one before has not answered in time.
func (h *hedging) startNext(hedge bool) {
	for h.started < len(h.p.endpoints) {
		i := h.started
		if err := h.ctx.Err(); errors.Is(err, context.Canceled) {
			return
		}
		h.started++
		if expired(h.ctx) {
			ee := notTried(h.p, h.p.endpoints[i])
			h.errs[i] = &ee
			continue
		}
		if hedge {
			h.p.log.Info("hedge started", "endpoint", h.p.endpoints[i].Name, "beside", h.p.endpoints[i-1].Name,
				"after", human.String(h.p.hedge))
		}
		h.start(i)
		return
	}
}

// start runs endpoint i under its circuit on a goroutine of its own, and
// times the hedge from now.
func (h *hedging) start(i int) {
	ep := h.p.endpoints[i]
	ctx, cancel := context.WithCancel(h.ctx)
	h.cancels[i] = cancel
	h.running++
	h.timer.Reset(h.p.hedge)
	go func() {
		e := hedgeEnd{i: i}
		defer func() {
			if r := recover(); r != nil {
				e.panicked = r
			}
			h.ends <- e
		}()
		fn := func(actx context.Context) error {
			if h.opt.BeforeRequest != nil {
				h.opt.BeforeRequest()
			}
			h.attempts.Add(1)
			a, err := h.c.attempt(actx, ep, h.p.parts)
			if err == nil {
				e.got = a
			}
			return err
		}
		if h.opt.Probe {
			e.err = h.c.circuits.Probe(ctx, ep.Name, fn)
		} else {
			e.err = h.c.circuits.Do(ctx, ep.Name, fn)
		}
	}()
}

// cancelAll cancels every endpoint started, but the one numbered keep.
func (h *hedging) cancelAll(keep int) {
	for i, cancel := range h.cancels {
		if cancel != nil && i != keep {
			cancel()
		}
	}
}

// lost records how an endpoint ended that another's answer (winner) had
// already beaten: cancelled, which is no failure, or failed before it could
// be.
func (h *hedging) lost(e hedgeEnd, winner int) {
	ep, by := h.p.endpoints[e.i], h.p.endpoints[winner].Name
	var ee EndpointError
	switch {
	case e.err == nil:
		ee = EndpointError{Name: ep.Name, Reason: "answered after " + by + ": its answer was not used", Cancelled: true}
	case errors.Is(e.err, context.Canceled):
		ee = EndpointError{Name: ep.Name, Reason: "cancelled: " + by + " answered first", Cancelled: true}
		h.p.log.Info("hedge cancelled", "endpoint", ep.Name, "answered", by)
	default:
		ee = h.c.endpointError(h.p, ep, e.err, h.p.limit)
	}
	h.errs[e.i] = &ee
}
