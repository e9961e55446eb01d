package mqtt

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"

	"github.com/fusebox-hq/fusebox/notify"
)

// Pool holds a Conn for each broker config a running process's rules name,
// and follows the config when it is reloaded (Use). It is safe for
// concurrent use.
type Pool struct {
	origin Origin
	log    *slog.Logger

	mu     sync.Mutex
	conns  map[notify.MQTT]*Conn
	ctl    *Controller
	closed bool
}

// Control has the connections dialled from now on publish, on each
// connection, the state of ctl's circuits, and those whose config asks
// for controls (notify: mqtt: {controls: true}) publish them and apply
// their presses through ctl. The daemon calls it once, before Use.
func (p *Pool) Control(ctl Controller) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ctl = &ctl
}

// NewPool returns an empty pool whose connections name o in discovery and
// log to logger.
func NewPool(o Origin, logger *slog.Logger) *Pool {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Pool{origin: o, log: logger, conns: map[notify.MQTT]*Conn{}}
}

// Use connects to each of cfgs not connected yet, at once, and closes,
// within ctx, the connections to those no longer named (the broker says
// offline for each).
func (p *Pool) Use(ctx context.Context, cfgs []notify.MQTT) {
	want := map[notify.MQTT]bool{}
	for _, c := range cfgs {
		want[c] = true
		p.conn(c)
	}
	p.mu.Lock()
	var gone []*Conn
	for cfg, c := range p.conns {
		if !want[cfg] {
			gone = append(gone, c)
			delete(p.conns, cfg)
		}
	}
	p.mu.Unlock()
	for _, c := range gone {
		if err := c.Close(ctx); err != nil {
			c.log.Info("mqtt: closing a broker the config no longer names", "err", err)
		}
	}
}

// conn returns cfg's connection, dialling it when there is none; nil once
// the pool is closed, or when cfg's broker cannot be dialled (the config
// checked it).
func (p *Pool) conn(cfg notify.MQTT) *Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	if c, ok := p.conns[cfg]; ok {
		return c
	}
	c, err := dial(cfg, p.origin, p.log, p.ctl)
	if err != nil {
		p.log.Error("mqtt: "+err.Error(), "broker", cfg.Broker)
		return nil
	}
	p.conns[cfg] = c
	return c
}

// ForRules is the notify.WithSink factory of a running process: the held
// connection of the rules' broker, else nil.
func (p *Pool) ForRules(_ string, r notify.Rules) notify.Sink {
	if r.MQTT == nil {
		return nil
	}
	if c := p.conn(*r.MQTT); c != nil {
		return c
	}
	return nil
}

// Close closes every connection, within ctx.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = map[notify.MQTT]*Conn{}
	p.mu.Unlock()
	var errs []error
	for _, c := range conns {
		errs = append(errs, c.Close(ctx))
	}
	return errors.Join(errs...)
}
