package mqtt

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/notify"
)

// Controller is what a connection needs of the daemon: the circuits to
// publish at every connection and their last transitions, and for
// controls their status and a way to apply a press on the daemon's own
// path (its trip and reset, with their notifications). Its functions are
// called from the connection's own goroutines, one press at a time, and
// must be safe for concurrent use.
type Controller struct {
	// Circuits lists the circuits whose rules name cfg, those of the
	// config whether or not they ever changed: those published on its
	// broker, with controls when it asks for them.
	Circuits func(ctx context.Context, cfg notify.MQTT) ([]string, error)
	// Latest returns the transition that left a circuit as it is now: its
	// To the stored phase (Closed for one never stored), its Reason, Time
	// and Since those of its last transition when the event log agrees,
	// else empty.
	Latest func(ctx context.Context, circuit string) (breaker.Event, error)
	// Status reads a circuit's status; its Reason is reason, or, when
	// reason is "", its last transition's.
	Status func(ctx context.Context, circuit, reason string) (Status, error)
	// Press applies a press on cfg's broker: it trips the circuit for
	// tripFor, or resets it when tripFor is 0 (Command.TripFor says which
	// a press asks); ErrUnknown when the daemon knows no such circuit with
	// controls there.
	Press func(ctx context.Context, cfg notify.MQTT, circuit string, tripFor time.Duration) error
	// PressEvery is the least time between two presses applied to one
	// circuit (default DefaultPressEvery): the others are dropped.
	PressEvery time.Duration
}

// ErrUnknown is Controller.Press's error for a circuit the daemon does
// not know: the press changes nothing.
var ErrUnknown = errors.New("no such circuit")

// DefaultPressEvery is Controller.PressEvery's default.
const DefaultPressEvery = 5 * time.Second

// The bounds of the presses: at most pressQueue wait to be applied (the
// others are dropped), and each kind of refused press is logged at most
// once every refusedEvery, with the count of those refused quietly.
const (
	pressQueue   = 16
	pressTimeout = 30 * time.Second
	refusedEvery = 10 * time.Minute
)

// quiet counts what is logged at most once per period, and the messages
// dropped quietly since the last line.
type quiet struct {
	logged  time.Time
	dropped int
}

// note counts one more and reports whether to log it now, with how many
// went quietly before it (since the last line).
func (q *quiet) note(now time.Time, every time.Duration) (log bool, before int) {
	q.dropped++
	if !q.logged.IsZero() && now.Sub(q.logged) < every {
		return false, 0
	}
	before = q.dropped - 1
	q.logged, q.dropped = now, 0
	return true, before
}

// presses is the state of a connection's presses; only its goroutine
// (applyPresses) touches it.
type presses struct {
	last    map[string]time.Time // by circuit: the last press applied
	refused map[string]*quiet    // by kind of refusal
}

// heardPress queues a press for applyPresses; a full queue drops it.
func (c *Conn) heardPress(payload []byte) {
	select {
	case c.pressed <- payload:
	default:
		c.mu.Lock()
		log, before := c.queueFull.note(time.Now(), refusedEvery)
		c.mu.Unlock()
		if log {
			c.log.Warn(fmt.Sprintf("mqtt: presses come faster than they are applied; dropped, and counted quietly for %s", refusedEvery),
				"topic", CommandTopic(c.p.cfg), "dropped_before", before)
		}
	}
}

// applyPresses applies the queued presses, one at a time, until ctx ends.
func (c *Conn) applyPresses(ctx context.Context) {
	ps := presses{last: map[string]time.Time{}, refused: map[string]*quiet{}}
	every := c.ctl.PressEvery
	if every <= 0 {
		every = DefaultPressEvery
	}
	for {
		select {
		case <-ctx.Done():
			return
		case payload := <-c.pressed:
			c.apply(ctx, &ps, every, payload)
		}
	}
}

func (c *Conn) apply(ctx context.Context, ps *presses, every time.Duration, payload []byte) {
	now := time.Now()
	cmd, err := ParseCommand(payload)
	if err != nil {
		ps.refuse(c, "malformed", now, "mqtt: a press that is not a fusebox command changes nothing", "err", err.Error())
		return
	}
	if at, ok := ps.last[cmd.Circuit]; ok && now.Sub(at) < every {
		ps.refuse(c, "too soon", now, fmt.Sprintf("mqtt: a press within %s of the last one applied to the circuit changes nothing", every), "circuit", cmd.Circuit)
		return
	}
	pctx, cancel := context.WithTimeout(ctx, pressTimeout)
	defer cancel()
	err = c.ctl.Press(pctx, c.p.cfg, cmd.Circuit, cmd.TripFor(c.p.cfg))
	switch {
	case errors.Is(err, ErrUnknown):
		ps.refuse(c, "unknown", now, "mqtt: a press for a circuit the daemon does not know changes nothing", "circuit", cmd.Circuit)
		return
	case err != nil:
		ps.refuse(c, "failed", now, "mqtt: a press could not be applied", "circuit", cmd.Circuit, "err", err.Error())
		return
	}
	ps.last[cmd.Circuit] = now
	for name, at := range ps.last { // as many as the circuits pressed within every
		if now.Sub(at) >= every {
			delete(ps.last, name)
		}
	}
	c.log.Info("mqtt: "+string(cmd.Press)+" pressed", "circuit", cmd.Circuit)
}

// refuse logs a refused press of kind, at most once every refusedEvery.
func (ps *presses) refuse(c *Conn, kind string, now time.Time, msg string, args ...any) {
	q := ps.refused[kind]
	if q == nil {
		q = &quiet{}
		ps.refused[kind] = q
	}
	if log, before := q.note(now, refusedEvery); log {
		c.log.Warn(msg+fmt.Sprintf("; the next ones are counted quietly for %s", refusedEvery),
			append(args, "topic", CommandTopic(c.p.cfg), "refused_before", before)...)
	}
}

// controlStatus reads circuit's status (fallback when it cannot be read),
// reason, when not "", taking the place of the one read: a transition's
// own.
func (c *Conn) controlStatus(ctx context.Context, circuit, reason string, fallback Status) Status {
	s, err := c.ctl.Status(ctx, circuit, reason)
	if err != nil {
		c.log.Info("mqtt: reading a circuit's status for its phase sensor failed", "circuit", circuit, "err", err)
		return fallback
	}
	return s
}
