package mqtt_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/notify"
	"github.com/fusebox-hq/fusebox/notify/mqtt"
)

// heard collects what a subscription hears, for a test to wait on.
type heard struct {
	ch chan string
}

func (h heard) fn(p []byte) { h.ch <- string(p) }

func (h heard) wait(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case got := <-h.ch:
			if got == want {
				return
			}
		case <-timeout:
			t.Fatalf("the subscription did not hear %q in 20s (a message lost, or the connection not made)", want)
		}
	}
}

// dialLogged holds a connection to the broker at addr, as instance nas,
// closed when the test ends; logged returns what it has logged so far.
func dialLogged(t *testing.T, addr string) (c *mqtt.Conn, logged func() string) {
	var logs strings.Builder
	var mu sync.Mutex
	c, err := mqtt.Dial(notify.MQTT{Broker: "tcp://" + addr, Prefix: "fusebox", Instance: "nas"}, origin,
		slog.New(slog.NewTextHandler(lockedWriter{&logs, &mu}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c, func() string {
		mu.Lock()
		defer mu.Unlock()
		return logs.String()
	}
}

// A subscription hears what the broker retains at its topic as it is
// taken, then every message; the connection lost (one warning) and made
// again, it is taken again by itself; stopped, it hears nothing more.
func TestSubscribeHearsRetainedAndResumesAfterALostConnection(t *testing.T) {
	addr := testenv.Mosquitto(t)
	proxy := newCutter(t, addr)
	pub := testenv.Subscribe(t, addr, "unused/topic")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	publish := func(payload string) {
		t.Helper()
		if _, err := pub.Client.Publish(ctx, &paho.Publish{Topic: "zigbee2mqtt/bridge/state", Payload: []byte(payload), Retain: true, QoS: 1}); err != nil {
			t.Fatal(err)
		}
	}
	publish(`{"state":"offline"}`)

	c, logged := dialLogged(t, proxy.addr())
	h := heard{ch: make(chan string, 16)}
	stop := c.Subscribe("zigbee2mqtt/bridge/state", h.fn)
	h.wait(t, `{"state":"offline"}`)
	publish(`{"state":"online"}`)
	h.wait(t, `{"state":"online"}`)

	proxy.cut()
	// The retained message again, on the new connection's subscription.
	h.wait(t, `{"state":"online"}`)
	publish("offline")
	h.wait(t, "offline")

	stop()
	c2 := heard{ch: make(chan string, 16)}
	publish("after stop")
	// A later subscription on the same connection, taken at once: retained,
	// its message comes whenever the broker takes it, after "after stop"
	// went out to whoever still subscribed.
	if _, err := pub.Client.Publish(ctx, &paho.Publish{Topic: "zigbee2mqtt/bridge/other", Payload: []byte("x"), Retain: true, QoS: 1}); err != nil {
		t.Fatal(err)
	}
	c.Subscribe("zigbee2mqtt/bridge/other", c2.fn)
	c2.wait(t, "x")
	select {
	case got := <-h.ch:
		t.Errorf("a stopped subscription heard %q", got)
	default:
	}
	if text := logged(); strings.Count(text, "level=WARN") != 1 {
		t.Errorf("the lost connection logged %d warnings, want 1:\n%s", strings.Count(text, "level=WARN"), text)
	}
}

// A broker that shuts down cleanly (it tells its clients so) and comes
// back, empty, on the same port: one warning, and the subscription is
// taken again by itself.
func TestSubscribeResumesAfterTheBrokerShutsDown(t *testing.T) {
	port := testenv.FreePort(t)
	broker := testenv.StartMosquitto(t, port)
	c, logged := dialLogged(t, broker.Addr)
	h := heard{ch: make(chan string, 16)}
	c.Subscribe("zigbee2mqtt/bridge/state", h.fn)
	retain := func(addr, payload string) {
		t.Helper()
		pub := testenv.Subscribe(t, addr, "unused/topic")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := pub.Client.Publish(ctx, &paho.Publish{Topic: "zigbee2mqtt/bridge/state", Payload: []byte(payload), Retain: true, QoS: 1}); err != nil {
			t.Fatal(err)
		}
	}
	retain(broker.Addr, "offline")
	h.wait(t, "offline")
	broker.Terminate()
	deadline := time.Now().Add(time.Minute)
	for {
		if strings.Contains(logged(), "connection lost") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the broker's shutdown was not warned of in a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	broker = testenv.StartMosquitto(t, port)
	retain(broker.Addr, "online")
	h.wait(t, "online")
	if text := logged(); strings.Count(text, "level=WARN") != 1 {
		t.Errorf("the shutdown logged %d warnings, want 1:\n%s", strings.Count(text, "level=WARN"), text)
	}
}

// A watched topic is anyone's to publish on: a message over MaxMessage
// reaches no handler, and one over MaxPacket the broker drops before
// sending it, since the connection told it the bound. A retained one is
// not heard again on the next connection either, and the topic is warned
// of once, however many come; the next message of a sane size is heard.
func TestSubscribeDropsOversizedMessages(t *testing.T) {
	addr := testenv.Mosquitto(t)
	proxy := newCutter(t, addr)
	c, logged := dialLogged(t, proxy.addr())
	const topic, other = "zigbee2mqtt/bridge/state", "zigbee2mqtt/bridge/other"
	pub := testenv.Subscribe(t, addr, "unused/topic")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	publish := func(topic string, payload []byte, retain bool) {
		t.Helper()
		if _, err := pub.Client.Publish(ctx, &paho.Publish{Topic: topic, Payload: payload, Retain: retain, QoS: 1}); err != nil {
			t.Fatal(err)
		}
	}
	publish(other, []byte("other"), true)
	h, ho := heard{ch: make(chan string, 16)}, heard{ch: make(chan string, 16)}
	c.Subscribe(topic, h.fn)
	c.Subscribe(other, ho.fn)
	ho.wait(t, "other") // retained: the subscriptions are taken
	saneNext := func(want string) {
		t.Helper()
		select {
		case got := <-h.ch:
			if got != want {
				t.Fatalf("a handler heard a message of %d bytes, want %q", len(got), want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("the sane message %q after the oversized ones was not heard in 20s", want)
		}
	}
	over := []byte(strings.Repeat("x", mqtt.MaxMessage+1))
	publish(topic, over, false)
	publish(topic, []byte(strings.Repeat("y", 2*mqtt.MaxPacket)), false)
	publish(topic, over, true)
	publish(topic, []byte("sane"), false)
	saneNext("sane")

	proxy.cut()
	ho.wait(t, "other") // the next connection's subscriptions are taken: the retained oversized one came before
	publish(topic, []byte("after"), false)
	saneNext("after")
	text := logged()
	if n := strings.Count(text, "level=WARN msg=\"mqtt: a message larger"); n != 1 || !strings.Contains(text, "topic="+topic) {
		t.Errorf("three oversized messages logged %d warnings, want 1 naming the topic:\n%s", n, text)
	}
}
