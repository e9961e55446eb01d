package fusebox

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/fusebox-hq/fusebox/breaker"
)

// maxQueued bounds the events waiting for a listener that falls behind.
const maxQueued = 4096

// dispatcher hands events to the listeners on a goroutine of its own, which
// runs only while events wait: an idle Circuits has no goroutine, so a
// process that makes one call and exits leaks nothing.
type dispatcher struct {
	fns     []func(breaker.Event) // called on the dispatcher's goroutine
	syncFns []func(breaker.Event) // called on the caller's
	logger  func() *slog.Logger

	mu      sync.Mutex
	queue   []breaker.Event
	running bool
	idle    chan struct{} // closed when the queue has drained
	dropped int
}

// emit queues e and starts the goroutine when it is not running. It never
// blocks on a listener.
func (d *dispatcher) emit(e breaker.Event) {
	for _, fn := range d.syncFns {
		d.call(fn, e)
	}
	if len(d.fns) == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.queue) >= maxQueued {
		d.dropped++
		return
	}
	d.queue = append(d.queue, e)
	if !d.running {
		d.running = true
		d.idle = make(chan struct{})
		go d.drain()
	}
}

func (d *dispatcher) drain() {
	for {
		d.mu.Lock()
		if len(d.queue) == 0 {
			dropped := d.dropped
			d.dropped = 0
			d.queue = nil
			d.running = false
			close(d.idle)
			d.mu.Unlock()
			if dropped > 0 {
				d.logger().Error("a listener fell behind; events were dropped", "dropped", dropped)
			}
			return
		}
		e := d.queue[0]
		d.queue = d.queue[1:]
		d.mu.Unlock()
		for _, fn := range d.fns {
			d.call(fn, e)
		}
	}
}

// call runs one listener, so that its panic is logged and goes no further.
func (d *dispatcher) call(fn func(breaker.Event), e breaker.Event) {
	defer func() {
		if r := recover(); r != nil {
			d.logger().Error("a listener panicked", "circuit", e.Circuit, "event", e.Kind, "panic", fmt.Sprint(r))
		}
	}()
	fn(e)
}

func (d *dispatcher) flush(ctx context.Context) error {
	d.mu.Lock()
	if !d.running {
		d.mu.Unlock()
		return nil
	}
	idle := d.idle
	d.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
