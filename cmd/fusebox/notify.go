package main

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/notify"
	"github.com/fusebox-hq/fusebox/notify/mqtt"
	"github.com/fusebox-hq/fusebox/redact"
	"github.com/fusebox-hq/fusebox/serve"
)

// notifySlack is added to the longest notify timeout to bound the wait for
// the listener at exit: the sender gives up at its timeout, this is what
// returning takes.
const notifySlack = 250 * time.Millisecond

// notifier wires a command's notifications: the listener its circuits get,
// and what runs once the call's output is written.
type notifier struct {
	sender *notify.Sender
	bound  time.Duration // the longest a command waits for notifications at exit
	redact *redact.Redactor
}

// newNotifier returns nil when the config asks for no notification.
func (a *app) newNotifier(cfg *config.Config, store fusebox.Admin) *notifier {
	if cfg == nil {
		return nil
	}
	var bound time.Duration
	any := false
	for _, r := range allRules(cfg) {
		if !r.Empty() || len(r.Heartbeats) > 0 {
			any = true
			bound = max(bound, r.TimeoutOrDefault())
		}
	}
	if !any {
		return nil
	}
	return &notifier{
		sender: notify.NewSender(cfg.Notify, store.Events, notify.WithLogger(a.logger), notify.WithSink(mqtt.SinkFor(mqtt.Fusebox(versionString())))),
		redact: a.redactor,
		bound:  bound + notifySlack,
	}
}

func allRules(cfg *config.Config) []notify.Rules {
	if cfg == nil {
		return nil
	}
	rules := []notify.Rules{cfg.DefaultNotify}
	for _, c := range cfg.Circuits {
		rules = append(rules, c.Notify)
	}
	return rules
}

// listener is the option that hands the circuits' events to the sender.
func (n *notifier) listener() []fusebox.Option {
	if n == nil {
		return nil
	}
	return []fusebox.Option{fusebox.WithListener(n.sender.Listen)}
}

// finish runs after the call's result is written: it pings the circuits'
// heartbeats with how the call went (a call that ran nothing, on an open
// circuit, pings none) and waits, within the bound, for the transitions'
// notifications.
func (n *notifier) finish(circuits *fusebox.Circuits, names []string, err error) {
	if n == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.bound)
	defer cancel()
	if !errors.Is(err, breaker.ErrOpen) {
		msg := ""
		if err != nil {
			msg = n.redact.String(err.Error())
		}
		for _, name := range names {
			n.sender.Heartbeat(ctx, name, err == nil, msg)
		}
	}
	circuits.Flush(ctx)
}

// daemonNotifier wires the daemon's notifications: its circuits hand their
// transitions to a queue and go on (a caller never waits for a webhook),
// it holds one MQTT connection per broker while it runs, and the rules are
// those of the config being served, reloads included.
type daemonNotifier struct {
	cfg    atomic.Pointer[config.Config]
	queue  *notify.Queue
	pool   *mqtt.Pool
	redact *redact.Redactor
	logger *slog.Logger
	closed sync.Once
}

// newDaemonNotifier returns the daemon's notifier; start connects it.
func (a *app) newDaemonNotifier(cfg *config.Config, store fusebox.Admin) *daemonNotifier {
	d := &daemonNotifier{pool: mqtt.NewPool(mqtt.Fusebox(versionString()), a.logger), redact: a.redactor, logger: a.logger}
	d.cfg.Store(cfg)
	sender := notify.NewSender(d.rules, store.Events, notify.WithLogger(a.logger), notify.WithSink(d.pool.ForRules))
	d.queue = notify.NewQueue(sender, 0)
	return d
}

// start connects to the config's brokers: the daemon is online.
func (d *daemonNotifier) start() { d.pool.Use(context.Background(), brokers(d.cfg.Load())) }

func (d *daemonNotifier) rules(circuit string) notify.Rules { return d.cfg.Load().Notify(circuit) }

// clientOptions has every circuit the daemon makes, health checks' and
// reloads' included, queue its transitions: quick, on the call's goroutine.
func (d *daemonNotifier) clientOptions() []httpcall.Option {
	return []httpcall.Option{httpcall.WithSyncListener(d.queue.Listen)}
}

// ran is serve.Options.OnCall: a call that ran pings the heartbeats of the
// name called, as a run does (one skipped on an open circuit pings none).
func (d *daemonNotifier) ran(name string, err error) {
	if errors.Is(err, breaker.ErrOpen) {
		return
	}
	msg := ""
	if err != nil {
		msg = d.redact.String(err.Error())
	}
	d.queue.Ran(name, err == nil, msg)
}

// reload has the notifications follow a config the daemon now serves.
func (d *daemonNotifier) reload(cfg *config.Config) {
	d.cfg.Store(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), notify.DefaultTimeout)
	defer cancel()
	d.pool.Use(ctx, brokers(cfg))
}

// close delivers what is queued, within the longest notify timeout, and
// disconnects from the brokers; once.
func (d *daemonNotifier) close() { d.closed.Do(d.flush) }

func (d *daemonNotifier) flush() {
	bound := notifySlack
	for _, r := range allRules(d.cfg.Load()) {
		bound = max(bound, r.TimeoutOrDefault()+notifySlack)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if dropped := d.queue.Close(ctx); dropped > 0 {
		d.logger.Error("notifications not sent: the daemon stopped before they could be", "dropped", dropped)
	}
	// A disconnect asks each broker for the will (offline): a second is
	// plenty on a live connection, and a dead one sends nothing anyway.
	ctx, cancel = context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	d.pool.Close(ctx)
}

// control has each broker publish, on every connection, the state of the
// circuits whose rules name it (those srv knows: of the config and in the
// store), Home Assistant's discovery included; and those whose config
// asks for controls publish Home Assistant's buttons and phase sensor of
// those circuits, and apply their presses through srv, as `fusebox trip
// --for` and `fusebox reset` through the daemon's API do, by "MQTT".
// Before start.
func (d *daemonNotifier) control(srv *serve.Server) {
	controlled := func(circuit string, cfg notify.MQTT) bool {
		m := d.rules(circuit).MQTT
		return m != nil && *m == cfg
	}
	d.pool.Control(mqtt.Controller{
		Circuits: func(ctx context.Context, cfg notify.MQTT) ([]string, error) {
			names, err := srv.Known(ctx)
			return slices.DeleteFunc(names, func(n string) bool { return !controlled(n, cfg) }), err
		},
		Latest: func(ctx context.Context, circuit string) (breaker.Event, error) {
			return latest(ctx, srv, circuit)
		},
		Status: func(ctx context.Context, circuit, reason string) (mqtt.Status, error) {
			st, now, err := srv.Circuit(ctx, circuit)
			if err != nil {
				return mqtt.Status{}, err
			}
			if reason == "" {
				// An event log that cannot be read leaves the reason out;
				// the state is what the sensor shows.
				reason, _ = srv.LastReason(ctx, circuit)
			}
			return mqtt.StatusOf(st, now, reason), nil
		},
		Press: func(ctx context.Context, cfg notify.MQTT, circuit string, tripFor time.Duration) error {
			if !controlled(circuit, cfg) {
				return mqtt.ErrUnknown
			}
			err := srv.Press(ctx, circuit, tripFor, "MQTT")
			if errors.Is(err, serve.ErrUnknownCircuit) {
				return mqtt.ErrUnknown
			}
			return err
		},
	})
}

// latest is the transition that left circuit as it is now: the stored
// phase (closed when never stored), with the reason, time and start of
// the last transition in the event log when it led there. An event log
// that cannot be read leaves them out: the phase is what Home Assistant
// shows.
func latest(ctx context.Context, srv *serve.Server, circuit string) (breaker.Event, error) {
	st, _, err := srv.Circuit(ctx, circuit)
	if err != nil {
		return breaker.Event{}, err
	}
	to := st.Phase
	if to == "" {
		to = breaker.Closed
	}
	if e, ok, _ := srv.LastTransition(ctx, circuit); ok && e.To == to {
		return e, nil
	}
	return breaker.Event{Kind: breaker.EventTransition, Circuit: circuit, To: to}, nil
}

// subscribe is serve.Options.Subscribe: a health watch's topic, on the
// connection the daemon holds to its broker.
func (d *daemonNotifier) subscribe(w notify.Watch, fn func([]byte)) (func(), error) {
	return d.pool.Subscribe(w.Broker, w.Topic, fn)
}

// brokers lists the MQTT configs the rules and health watches of cfg
// name, once each.
func brokers(cfg *config.Config) []notify.MQTT {
	var out []notify.MQTT
	for _, r := range allRules(cfg) {
		if r.MQTT != nil && !slices.Contains(out, *r.MQTT) {
			out = append(out, *r.MQTT)
		}
	}
	for _, w := range cfg.Watches() {
		if !slices.Contains(out, w.Broker) {
			out = append(out, w.Broker)
		}
	}
	return out
}
