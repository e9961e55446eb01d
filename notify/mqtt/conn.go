package mqtt

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/notify"
)

// Conn is one connection to a broker, held while a process runs (the
// daemon). It connects at once and again whenever the connection drops,
// with backoff; on every connection it says online at ServeTopic (with a
// last will of offline there, which it has the broker publish when it
// closes too), publishes Home Assistant discovery of that topic, publishes
// again the latest state of every circuit it sent and, given a Controller,
// the state now of every circuit whose rules name its broker (discovery
// included, so that a circuit has its entity before its first
// transition), so that a broker that was down or restarted empty catches
// up; and it takes again the subscriptions of Subscribe. Its circuits'
// entities are available only while ServeTopic says online
// (Discovery.HeldBy). It is safe for concurrent use.
type Conn struct {
	p      publisher
	serve  string // ServeTopic
	log    *slog.Logger
	cm     *autopaho.ConnectionManager
	cancel context.CancelFunc

	// turn lets one publisher at a time through, so that the latest state
	// a reconnection publishes again never overtakes a newer one.
	turn chan struct{}

	mu      sync.Mutex
	last    map[string]*paho.Publish // by topic: the latest retained message sent
	order   []string                 // the topics of last, in the order first sent
	subs    map[string][]*handler    // by topic: who hears its messages (Subscribe)
	up      bool                     // connected
	downErr error                    // what ended the last connection, when told before lost
	pending *time.Timer              // a loss not logged yet, waiting for its reason (lost)
	failing bool                     // the last connection attempt failed, and was logged
	closed  bool
	big     map[string]*quiet // by subscribed topic: messages dropped for their size
	bg      sync.WaitGroup

	// ctl, when the pool was given one: the circuits whose state goes out
	// on every connection. controls, when the config asks for them too:
	// presses heard on CommandTopic wait in pressed for applyPresses.
	ctl       *Controller
	controls  bool
	pressed   chan []byte
	queueFull quiet // presses dropped for a full queue; under mu
}

var _ notify.Sink = (*Conn)(nil)

// dial starts connecting to cfg's broker, its discovery messages naming o,
// and returns at once; logger hears the connection come and go (nil: not
// at all), and ctl, when not nil, gives the circuits to publish and, when
// cfg asks for them, their controls. Close ends it.
func dial(cfg notify.MQTT, o Origin, logger *slog.Logger, ctl *Controller) (*Conn, error) {
	u, err := url.Parse(cfg.Broker)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c := &Conn{p: newPublisher(cfg, o), serve: ServeTopic(cfg), log: logger.With("broker", u.Host),
		turn: make(chan struct{}, 1), last: map[string]*paho.Publish{}, subs: map[string][]*handler{},
		big: map[string]*quiet{}, ctl: ctl}
	c.p.held = true
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	if cfg.Controls && ctl != nil {
		c.controls, c.pressed = true, make(chan []byte, pressQueue)
		c.subs[CommandTopic(cfg)] = []*handler{{fn: c.heardPress}}
		c.bg.Add(1)
		go func() {
			defer c.bg.Done()
			c.applyPresses(ctx)
		}()
	}
	c.cm, err = autopaho.NewConnection(ctx, autopaho.ClientConfig{
		ServerUrls:                    []*url.URL{u},
		KeepAlive:                     30,
		CleanStartOnInitialConnection: true,
		ReconnectBackoff:              autopaho.NewExponentialBackoff(time.Second, 2*time.Minute, 2*time.Second, 2),
		ConnectTimeout:                10 * time.Second,
		AttemptConnection:             dialLimited, // reads bounded to MaxPacket a packet
		ConnectUsername:               cfg.Username,
		ConnectPassword:               []byte(cfg.Password),
		WillMessage:                   &paho.WillMessage{Topic: c.serve, Payload: []byte(Offline), Retain: true, QoS: 1},
		OnConnectionUp:                func(cm *autopaho.ConnectionManager, _ *paho.Connack) { c.connected(ctx, cm) },
		OnConnectionDown: func() bool {
			c.lost()
			return true // and reconnect
		},
		OnConnectError: c.connectFailed,
		// The broker drops, for this client, a message whose packet is
		// larger (MQTT v5's Maximum Packet Size): a 30 MB publish on a
		// watched topic never reaches the daemon's memory.
		ConnectPacketBuilder: func(cp *paho.Connect, _ *url.URL) (*paho.Connect, error) {
			if cp.Properties == nil {
				cp.Properties = &paho.ConnectProperties{}
			}
			limit := uint32(MaxPacket)
			cp.Properties.MaximumPacketSize = &limit
			return cp, nil
		},
		// MQTT v5's "disconnect with will message": a daemon that stops is
		// gone for Home Assistant as one that died.
		DisconnectPacketBuilder: func() *paho.Disconnect { return &paho.Disconnect{ReasonCode: 0x04} },
		ClientConfig: paho.ClientConfig{
			ClientID:      fmt.Sprintf("fusebox-serve-%s-%x", c.p.instance, rand.Uint32()),
			OnClientError: func(err error) { c.why(err) },
			OnServerDisconnect: func(d *paho.Disconnect) {
				c.why(fmt.Errorf("the broker disconnected, reason code 0x%02x", d.ReasonCode))
			},
			OnPublishReceived: []func(paho.PublishReceived) (bool, error){c.received},
		},
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("mqtt %s: %w", u.Host, err)
	}
	return c, nil
}

func (c *Conn) String() string { return brokerName(c.p.cfg) }

// why and lost come in either order: paho closes the connection, which
// autopaho reports as down (lost), and tells the reason (why) on a
// goroutine of its own. The second of them logs the loss with its reason;
// a loss whose reason has not come within lostWait is logged without one.
const lostWait = time.Second

// why keeps what ended the connection, or logs the loss lost is waiting
// with it.
func (c *Conn) why(err error) {
	c.mu.Lock()
	if c.pending == nil {
		c.downErr = err
		c.mu.Unlock()
		return
	}
	c.pending.Stop()
	c.pending = nil
	c.mu.Unlock()
	c.logLost(err)
}

// lost logs a connection lost, however it ended, once, as a warning: the
// attempts to connect again that fail are logged quietly until one
// succeeds. Without its reason yet, it waits for why.
func (c *Conn) lost() {
	c.mu.Lock()
	c.up = false
	quiet := c.failing || c.closed
	c.failing = true
	err := c.downErr
	c.downErr = nil
	if !quiet && err == nil && c.pending == nil {
		c.pending = time.AfterFunc(lostWait, func() {
			c.mu.Lock()
			told := c.pending == nil || c.closed
			c.pending = nil
			c.mu.Unlock()
			if !told {
				c.logLost(nil)
			}
		})
		quiet = true
	}
	c.mu.Unlock()
	if !quiet {
		c.logLost(err)
	}
}

func (c *Conn) logLost(err error) {
	c.log.Warn("mqtt: connection lost; reconnecting in the background", "err", err)
}

// connectFailed logs the first of a run of failed attempts, as a warning;
// the rest are retried quietly until one succeeds.
func (c *Conn) connectFailed(err error) {
	c.mu.Lock()
	first := !c.failing
	c.failing = true
	c.mu.Unlock()
	if first {
		c.log.Warn("mqtt: cannot connect to the broker; retrying in the background", "err", err)
	} else {
		c.log.Debug("mqtt: cannot connect to the broker", "err", err)
	}
}

// connected runs on each connection, and publishes off autopaho's
// goroutine (which it must not block): online, the discovery of
// ServeTopic, the latest state sent again, then every circuit's state now
// (current). It is given cm, as c.cm may not be set yet on the first
// connection.
func (c *Conn) connected(ctx context.Context, cm *autopaho.ConnectionManager) {
	c.mu.Lock()
	c.up = true
	c.downErr = nil // a reason come after its loss was logged is not the next one's
	if c.closed {
		c.mu.Unlock()
		return
	}
	if c.failing {
		c.log.Info("mqtt: connected to the broker")
		c.failing = false
	}
	c.bg.Add(2)
	c.mu.Unlock()
	subscribed := make(chan struct{})
	go func() {
		defer c.bg.Done()
		defer close(subscribed)
		c.subscribe(cm, c.topics())
	}()
	go func() {
		defer c.bg.Done()
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if c.controls {
			// The buttons are published once their presses are heard.
			select {
			case <-subscribed:
			case <-ctx.Done():
				return
			}
		}
		if err := c.take(ctx); err != nil {
			return
		}
		defer c.give()
		msgs := []*paho.Publish{}
		if topic, d := c.p.serveDiscovery(); topic != "" {
			b, _ := json.Marshal(d)
			msgs = append(msgs, retained(topic, b))
		}
		msgs = append(msgs, retained(c.serve, []byte(Online)))
		c.mu.Lock()
		for _, t := range c.order {
			msgs = append(msgs, c.last[t])
		}
		c.mu.Unlock()
		if c.ctl != nil {
			fresh := c.current(ctx)
			c.keep(fresh)
			msgs = append(msgs, fresh...)
		}
		for _, m := range msgs {
			if _, err := cm.Publish(ctx, m); err != nil {
				c.log.Info("mqtt: publishing on connection failed; publishing again on the next", "topic", m.Topic, "err", err)
				return
			}
		}
	}()
}

func (c *Conn) take(ctx context.Context) error {
	select {
	case c.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Conn) give() { <-c.turn }

// Send publishes the circuit's state after the transition e, as Sink does,
// over the held connection. While there is none, it keeps the state for
// the next connection and returns at once: a broker that is down holds no
// delivery.
func (c *Conn) Send(ctx context.Context, e breaker.Event, _ *notify.Message) error {
	if e.Kind != breaker.EventTransition {
		return nil
	}
	msgs := c.p.transition(e)
	if c.controls {
		s := c.controlStatus(ctx, e.Circuit, e.Reason, Status{Phase: PhaseOf(e.To), Reason: e.Reason})
		msgs = append(msgs, c.p.controls(e.Circuit, s)...)
	}
	if err := c.take(ctx); err != nil {
		return fmt.Errorf("waiting to publish: %w", err)
	}
	defer c.give()
	up := c.keep(msgs)
	if !up {
		c.log.Debug("mqtt: not connected; the state goes out on the next connection", "circuit", e.Circuit)
		return nil
	}
	for _, m := range msgs {
		if _, err := c.cm.Publish(ctx, m); err != nil {
			return fmt.Errorf("publish %s: %w", m.Topic, err)
		}
	}
	return nil
}

// keep notes msgs as the latest of their topics, for the next connection
// to publish again, and reports whether c is connected.
func (c *Conn) keep(msgs []*paho.Publish) (up bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		if len(m.Payload) == 0 {
			continue // a cleared topic stays cleared
		}
		if _, ok := c.last[m.Topic]; !ok {
			c.order = append(c.order, m.Topic)
		}
		c.last[m.Topic] = m
	}
	return c.up
}

// Close disconnects, asking the broker to publish the last will (offline
// at ServeTopic) as it would had the connection been lost, and waits for
// the connection's goroutines within ctx.
func (c *Conn) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.bg.Wait()
	return c.cm.Disconnect(ctx)
}

// current returns the messages of every circuit of c's broker as it is
// now, discovery and controls included: what a connection publishes
// after the latest it sent, so that a circuit that never changed (one a
// health watch alone moves) has its entity from the daemon's start, and a
// broker that lost its retained messages has every circuit's again.
func (c *Conn) current(ctx context.Context) []*paho.Publish {
	names, err := c.ctl.Circuits(ctx, c.p.cfg)
	if err != nil {
		c.log.Info("mqtt: listing the circuits to publish failed; publishing them again on the next connection", "err", err)
	}
	var msgs []*paho.Publish
	for _, n := range names {
		e, err := c.ctl.Latest(ctx, n)
		if err != nil {
			c.log.Info("mqtt: reading a circuit's state to publish failed; publishing it on its next transition", "circuit", n, "err", err)
			continue
		}
		e.Circuit, e.Kind = n, breaker.EventTransition
		msgs = append(msgs, c.p.transition(e)...)
		if c.controls {
			msgs = append(msgs, c.p.controls(n, c.controlStatus(ctx, n, "", Status{Phase: PhaseOf(e.To)}))...)
		}
	}
	return msgs
}
