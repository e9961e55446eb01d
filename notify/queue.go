package notify

import (
	"context"
	"sync"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// DefaultHeartbeatEvery is how often a Queue pings a circuit's heartbeats
// at most while its calls keep the same outcome.
const DefaultHeartbeatEvery = 30 * time.Second

// maxLane bounds the transitions waiting for one circuit's deliveries.
const maxLane = 256

// Queue delivers a Sender's notifications in the background, for a process
// that answers others (the daemon) and must not keep them waiting on a
// webhook: Listen and Ran only queue, and return at once. Each circuit's
// transitions go out in order, one at a time; circuits do not wait for
// each other, nor a circuit's heartbeats for its transitions. Close waits
// for what is queued. It is safe for concurrent use.
type Queue struct {
	s     *Sender
	every time.Duration
	// ctx is every delivery's: Close ends it when its own time is up, so
	// that what is still queued is given up at once.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	lanes   map[laneKey]*lane
	busy    int           // lanes delivering
	drained chan struct{} // closed when busy falls to 0 after Close began
	closing bool
	dropped int // not delivered: the queue was full, or closed
}

// laneKey names one circuit's transitions, or its heartbeats.
type laneKey struct {
	circuit string
	beats   bool
}

type lane struct {
	events  []queued
	beat    *beat // the latest heartbeat waiting: a newer replaces it
	running bool
	// The last heartbeat queued: one with the same outcome is not queued
	// again within every.
	beatOK    bool
	beatAt    time.Time
	beatSince bool
}

// queued is a transition to deliver, or the message ending a flapping
// (settled, with the flapping's last transition).
type queued struct {
	e       breaker.Event
	settled *Message
}

type beat struct {
	ok  bool
	msg string
}

// NewQueue returns a Queue delivering through s, pinging a circuit's
// heartbeats at most once every `every` (DefaultHeartbeatEvery when 0)
// while its outcome stays the same; a change of outcome is pinged at once.
// The queue takes s over, before s delivers anything: the message that
// ends a flapping goes through the circuit's lane too.
func NewQueue(s *Sender, every time.Duration) *Queue {
	if every <= 0 {
		every = DefaultHeartbeatEvery
	}
	ctx, cancel := context.WithCancel(context.Background())
	q := &Queue{s: s, every: every, ctx: ctx, cancel: cancel, lanes: map[laneKey]*lane{}, drained: make(chan struct{})}
	s.onSettled = q.settled
	return q
}

// settled queues the message ending a circuit's flapping in the
// circuit's lane, after its transitions.
func (q *Queue) settled(e breaker.Event, m Message) {
	q.push(queued{e: e, settled: &m})
}

// Listen queues a transition's notifications (a fusebox listener, quick
// enough for fusebox.WithSyncListener).
func (q *Queue) Listen(e breaker.Event) {
	if e.Kind != breaker.EventTransition || len(q.s.extra) == 0 && q.s.rules(e.Circuit).Empty() {
		return
	}
	q.push(queued{e: e})
}

// push queues x in its circuit's lane, unless the lane is full or the
// queue closing.
func (q *Queue) push(x queued) {
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.lane(laneKey{circuit: x.e.Circuit})
	if l == nil || len(l.events) >= maxLane {
		q.dropped++
		return
	}
	l.events = append(l.events, x)
	q.start(laneKey{circuit: x.e.Circuit}, l)
}

// Ran queues a ping of the circuit's heartbeats after a call that ran: ok,
// or failed with msg.
func (q *Queue) Ran(circuit string, ok bool, msg string) {
	if len(q.s.rules(circuit).Heartbeats) == 0 {
		return
	}
	now := time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	k := laneKey{circuit: circuit, beats: true}
	l := q.lane(k)
	if l == nil {
		return
	}
	if l.beatSince && l.beatOK == ok && now.Sub(l.beatAt) < q.every {
		return
	}
	l.beatOK, l.beatAt, l.beatSince = ok, now, true
	l.beat = &beat{ok, msg}
	q.start(k, l)
}

// lane returns k's lane, nil once closing. q.mu is held.
func (q *Queue) lane(k laneKey) *lane {
	if q.closing {
		return nil
	}
	l := q.lanes[k]
	if l == nil {
		l = &lane{}
		q.lanes[k] = l
	}
	return l
}

// start runs k's lane unless it runs. q.mu is held.
func (q *Queue) start(k laneKey, l *lane) {
	if l.running {
		return
	}
	l.running = true
	q.busy++
	go q.run(k, l)
}

// run delivers the lane's work until none is left.
func (q *Queue) run(k laneKey, l *lane) {
	for {
		q.mu.Lock()
		if q.ctx.Err() != nil { // Close gave up: what is left is not sent
			q.dropped += len(l.events)
			if l.beat != nil {
				q.dropped++
			}
			l.events, l.beat = nil, nil
		}
		var e *queued
		var b *beat
		switch {
		case len(l.events) > 0:
			next := l.events[0]
			e, l.events = &next, l.events[1:]
		case l.beat != nil:
			b, l.beat = l.beat, nil
		default:
			l.running = false
			if !k.beats {
				delete(q.lanes, k) // a heartbeat lane keeps when it last pinged
			}
			q.busy--
			if q.busy == 0 && q.closing {
				close(q.drained)
			}
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		switch {
		case e != nil && e.settled != nil:
			q.s.settled(q.ctx, e.e, *e.settled)
		case e != nil:
			q.s.Deliver(q.ctx, e.e)
		default:
			q.s.Heartbeat(q.ctx, k.circuit, b.ok, b.msg)
		}
	}
}

// Close stops taking notifications and waits until what is queued is
// delivered, each within its timeout, or ctx ends: then what is being
// delivered is given up, and what waits is dropped. It reports how many
// notifications were dropped, full queues included.
func (q *Queue) Close(ctx context.Context) (dropped int) {
	q.mu.Lock()
	first := !q.closing
	q.closing = true
	if first && q.busy == 0 {
		close(q.drained)
	}
	q.mu.Unlock()
	select {
	case <-q.drained:
	case <-ctx.Done():
		q.cancel()
		<-q.drained
	}
	q.cancel()
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.dropped
}
