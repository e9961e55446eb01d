package notify

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// Sink delivers notifications. Send is called for every transition the
// process made, with m nil when the transition sends no message (a sink
// that keeps state, like MQTT's, publishes it anyway); it must give up when
// ctx ends. Sinks are called concurrently, each one message at a time.
type Sink interface {
	Send(ctx context.Context, e breaker.Event, m *Message) error
	String() string // for logs: names the sink, and no secret
}

// Sender decides and delivers the notifications of the transitions a
// process makes: pass its Listen to fusebox.WithListener, and call the
// Circuits' Flush before the process exits. It is safe for concurrent use.
type Sender struct {
	rules  func(circuit string) Rules
	events func(ctx context.Context, circuit string, since time.Time) ([]breaker.Event, error)
	extra  []func(circuit string, r Rules) Sink
	logger *slog.Logger
	client *http.Client
	flaps  flaps
	// onSettled hands on the message ending a flapping (see flaps), which
	// a timer makes: delivered at once, or queued by a Queue.
	onSettled func(e breaker.Event, m Message)
}

// Option configures a Sender.
type Option func(*Sender)

// WithLogger sets where failures to notify are logged (default nowhere).
func WithLogger(l *slog.Logger) Option { return func(s *Sender) { s.logger = l } }

// WithHTTPClient sets the client of webhooks and heartbeats.
func WithHTTPClient(c *http.Client) Option { return func(s *Sender) { s.client = c } }

// WithSink adds a sink made from a circuit's rules, nil when the rules ask
// for none: how notify/mqtt joins without this package importing it.
func WithSink(f func(circuit string, r Rules) Sink) Option {
	return func(s *Sender) { s.extra = append(s.extra, f) }
}

// NewSender returns a Sender with each circuit's rules, reading an outage's
// events with events (a Store's Events).
func NewSender(rules func(circuit string) Rules, events func(ctx context.Context, circuit string, since time.Time) ([]breaker.Event, error), opts ...Option) *Sender {
	s := &Sender{rules: rules, events: events, logger: slog.New(slog.NewTextHandler(io.Discard, nil)), client: &http.Client{}}
	for _, o := range opts {
		o(s)
	}
	s.onSettled = func(e breaker.Event, m Message) { s.settled(context.Background(), e, m) }
	return s
}

// Listen handles one event (a fusebox listener): on a transition, it
// decides the message and delivers it to every sink within the rules'
// timeout, retrying a failed delivery at most once. A circuit that flaps
// sends a bounded number of messages (see flapLimit): the sinks still
// hear each transition, with no message. It returns when every
// sink is done or the time is up, and never panics on a sink's failure:
// failures are logged.
func (s *Sender) Listen(e breaker.Event) { s.Deliver(context.Background(), e) }

// Deliver is Listen within ctx as well as the rules' timeout.
func (s *Sender) Deliver(ctx context.Context, e breaker.Event) {
	if e.Kind != breaker.EventTransition {
		return
	}
	r := s.rules(e.Circuit)
	sinks := s.sinks(e.Circuit, r)
	if len(sinks) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, r.TimeoutOrDefault())
	defer cancel()
	var outage []breaker.Event
	if !e.Since.IsZero() {
		var err error
		if outage, err = s.events(ctx, e.Circuit, e.Since); err != nil {
			s.logger.Warn("notify: cannot read the outage's events; deciding on this transition alone", "circuit", e.Circuit, "err", err)
		}
	}
	var m *Message
	if msg, ok := Decide(r, outage, e); ok {
		m = &msg
	}
	m = s.flaps.pass(e, m, func(e breaker.Event, m Message) { s.onSettled(e, m) })
	s.send(ctx, sinks, e, m)
}

// settled delivers the message that ends a circuit's flapping, with its
// last transition e, within ctx and the rules' timeout.
func (s *Sender) settled(ctx context.Context, e breaker.Event, m Message) {
	r := s.rules(e.Circuit)
	ctx, cancel := context.WithTimeout(ctx, r.TimeoutOrDefault())
	defer cancel()
	s.send(ctx, s.sinks(e.Circuit, r), e, &m)
}

// send delivers the transition e, and m when not nil, to sinks.
func (s *Sender) send(ctx context.Context, sinks []Sink, e breaker.Event, m *Message) {
	jobs := make([]job, len(sinks))
	for i, k := range sinks {
		jobs[i] = job{k.String(), func(ctx context.Context) error { return k.Send(ctx, e, m) }}
	}
	s.deliver(ctx, jobs, e.Circuit)
}

// Heartbeat pings the circuit's heartbeat URLs after a run: ok, or failed
// with msg. It returns within the rules' timeout.
func (s *Sender) Heartbeat(ctx context.Context, circuit string, ok bool, msg string) {
	r := s.rules(circuit)
	if len(r.Heartbeats) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, r.TimeoutOrDefault())
	defer cancel()
	jobs := make([]job, len(r.Heartbeats))
	for i, hb := range r.Heartbeats {
		jobs[i] = job{"heartbeat " + redactURL(hb.URL), func(ctx context.Context) error { return Ping(ctx, s.client, hb, ok, msg) }}
	}
	s.deliver(ctx, jobs, circuit)
}

// job is one delivery: to whom, and how.
type job struct {
	to  string
	run func(context.Context) error
}

func (s *Sender) sinks(circuit string, r Rules) []Sink {
	var sinks []Sink
	for _, w := range r.Webhooks {
		sinks = append(sinks, &webhookSink{hook: w, client: s.client})
	}
	if len(r.OnOpen) > 0 || len(r.OnClose) > 0 {
		sinks = append(sinks, &commandSink{onOpen: r.OnOpen, onClose: r.OnClose})
	}
	for _, f := range s.extra {
		if k := f(circuit, r); k != nil {
			sinks = append(sinks, k)
		}
	}
	return sinks
}

// deliver runs every job at once, each tried at most twice: the first try
// gets half the time left, so that a destination that hangs still leaves
// time for its retry.
func (s *Sender) deliver(ctx context.Context, jobs []job, circuit string) {
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() {
			err := try(ctx, j, true)
			if err == nil {
				return
			}
			s.logger.Warn("notify failed; retrying once", "circuit", circuit, "to", j.to, "err", err)
			if err = try(ctx, j, false); err != nil {
				s.logger.Error("notify failed", "circuit", circuit, "to", j.to, "err", err)
			}
		})
	}
	wg.Wait()
}

func try(ctx context.Context, j job, first bool) error {
	if first {
		if d, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Until(d)/2)
			defer cancel()
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("no time left: %w", err)
	}
	return j.run(ctx)
}
