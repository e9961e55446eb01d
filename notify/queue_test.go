package notify_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/notify"
)

// gate is a sink that records each transition it is sent and holds each
// delivery until released or the delivery's time is up.
type gate struct {
	mu      sync.Mutex
	got     []string
	release chan struct{}
}

func newGate() *gate { return &gate{release: make(chan struct{})} }

func (g *gate) String() string { return "gate" }

func (g *gate) Send(ctx context.Context, e breaker.Event, _ *notify.Message) error {
	g.mu.Lock()
	g.got = append(g.got, e.Circuit+" "+string(e.To))
	g.mu.Unlock()
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) sent() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.got...)
}

func queueWith(r notify.Rules, sinks map[string]notify.Sink, opts ...notify.Option) *notify.Queue {
	opts = append(opts, notify.WithSink(func(circuit string, _ notify.Rules) notify.Sink { return sinks[circuit] }))
	return notify.NewQueue(sender(r, opts...), 0)
}

func transitionOf(circuit string, to breaker.Phase, s int) breaker.Event {
	from := breaker.Closed
	if to == breaker.Closed {
		from = breaker.HalfOpen
	}
	return breaker.Event{Time: at(s), Circuit: circuit, Kind: breaker.EventTransition, From: from, To: to, Since: t0}
}

// A delivery that hangs holds neither the caller of Listen nor another
// circuit's delivery; the circuit's own next transition waits its turn.
func TestQueueListenNeverWaitsForADelivery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow, quick := newGate(), newGate()
		close(quick.release)
		q := queueWith(notify.Rules{Timeout: time.Hour},
			map[string]notify.Sink{"bridge": slow, "weather": quick})
		start := time.Now()
		q.Listen(transitionOf("bridge", breaker.Open, 20))
		q.Listen(transitionOf("bridge", breaker.Closed, 800))
		q.Listen(transitionOf("weather", breaker.Open, 20))
		if took := time.Since(start); took != 0 {
			t.Errorf("Listen took %s of the clock with a delivery hanging", took)
		}
		synctest.Wait()
		if got := slow.sent(); len(got) != 1 || got[0] != "bridge open" {
			t.Errorf("bridge's sink got %q while its first delivery hangs, want only the opening", got)
		}
		if got := quick.sent(); len(got) != 1 {
			t.Errorf("weather's sink got %q while bridge's delivery hangs, want its opening", got)
		}
		close(slow.release)
		if dropped := q.Close(context.Background()); dropped != 0 {
			t.Errorf("Close dropped %d", dropped)
		}
		if got := slow.sent(); strings.Join(got, ", ") != "bridge open, bridge closed" {
			t.Errorf("bridge's sink got %q, want the opening, then the closing", got)
		}
	})
}

// Close waits for what is queued, each delivery within its timeout, and no
// longer than its own context: then what waits is dropped.
func TestQueueCloseFlushesWithinTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hang := newGate()
		q := queueWith(notify.Rules{Timeout: 5 * time.Second}, map[string]notify.Sink{"bridge": hang})
		q.Listen(transitionOf("bridge", breaker.Open, 20))
		synctest.Wait()
		start := time.Now()
		if dropped := q.Close(context.Background()); dropped != 0 {
			t.Errorf("Close dropped %d", dropped)
		}
		// One try gets half the timeout, its retry the rest.
		if took := time.Since(start); took != 5*time.Second {
			t.Errorf("Close took %s with a hanging delivery, want its 5s timeout", took)
		}

		hang = newGate()
		q = queueWith(notify.Rules{Timeout: time.Hour}, map[string]notify.Sink{"bridge": hang})
		for s := range 3 {
			q.Listen(transitionOf("bridge", breaker.Open, 20+s))
		}
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start = time.Now()
		if dropped := q.Close(ctx); dropped != 2 {
			t.Errorf("Close dropped %d, want the 2 transitions still waiting", dropped)
		}
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("Close took %s, want its own 2s", took)
		}
		q.Listen(transitionOf("bridge", breaker.Closed, 800))
		if got := hang.sent(); len(got) != 1 {
			t.Errorf("sent %q, want only the first delivery, given up, and nothing after Close", got)
		}
	})
}

// pings is a transport that records heartbeat pings, without a network.
type pings struct {
	mu  sync.Mutex
	got []string
}

func (p *pings) RoundTrip(r *http.Request) (*http.Response, error) {
	p.mu.Lock()
	p.got = append(p.got, r.Method+" "+r.URL.Path)
	p.mu.Unlock()
	return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
}

func (p *pings) all() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.got, ", ")
}

// A daemon's calls come many a second: a circuit's heartbeat is pinged at
// once when the outcome changes, and else at most every 30s.
func TestQueuePingsHeartbeatsWhenTheOutcomeChangesOrEvery30s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p pings
		q := notify.NewQueue(sender(notify.Rules{Heartbeats: []notify.Heartbeat{{URL: "http://hc.test/uuid"}}},
			notify.WithHTTPClient(&http.Client{Transport: &p})), 0)
		for range 100 {
			q.Ran("bridge", true, "")
		}
		synctest.Wait()
		q.Ran("bridge", false, "refused") // a change: at once
		synctest.Wait()
		q.Ran("bridge", false, "refused")
		time.Sleep(30 * time.Second)
		q.Ran("bridge", false, "refused") // 30s on: once more
		synctest.Wait()
		q.Ran("bridge", true, "")
		q.Close(context.Background())
		if got, want := p.all(), "GET /uuid, POST /uuid/fail, POST /uuid/fail, GET /uuid"; got != want {
			t.Errorf("pings = %s, want %s", got, want)
		}
	})
}
