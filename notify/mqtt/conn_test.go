package mqtt_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/notify"
	"github.com/fusebox-hq/fusebox/notify/mqtt"
)

// cutter is a TCP proxy to a broker whose connections the test can cut, as
// a network would: the broker sees the client go without a DISCONNECT.
type cutter struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newCutter(t *testing.T, broker string) *cutter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln}
	c.wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", broker)
			if err != nil {
				in.Close()
				continue
			}
			c.mu.Lock()
			c.conns = append(c.conns, in, out)
			c.mu.Unlock()
			c.wg.Go(func() { io.Copy(out, in); out.Close() })
			c.wg.Go(func() { io.Copy(in, out); in.Close() })
		}
	})
	t.Cleanup(func() { ln.Close(); c.cut(); c.wg.Wait() })
	return c
}

func (c *cutter) addr() string { return c.ln.Addr().String() }

func (c *cutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}

// A held connection says online, with Home Assistant discovery of that
// topic, and offline when it is lost; it reconnects by itself and publishes
// the latest state again, so that a broker that lost it catches up; Close
// says offline.
func TestConnHoldsOneConnectionWithAWill(t *testing.T) {
	addr := testenv.Mosquitto(t)
	proxy := newCutter(t, addr)
	cfg := notify.MQTT{Broker: "tcp://" + proxy.addr(), Prefix: "fusebox", Discovery: "homeassistant", Instance: "nas"}
	sub := testenv.Subscribe(t, addr, "#")
	var logs strings.Builder
	var logMu sync.Mutex
	c, err := mqtt.Dial(cfg, origin, slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	serve := "fusebox/serve/nas/availability"
	if serve != mqtt.ServeTopic(cfg) {
		t.Fatalf("ServeTopic = %s", mqtt.ServeTopic(cfg))
	}
	sub.Wait(t, serve, "online")
	topic := "homeassistant/binary_sensor/fusebox_nas/serve/config"
	var d map[string]any
	if err := json.Unmarshal(sub.Wait(t, topic, "").Payload, &d); err != nil {
		t.Fatal(err)
	}
	if bad := checkBinarySensor(topic, d); len(bad) > 0 || d["state_topic"] != serve || d["device_class"] != "connectivity" {
		t.Errorf("the daemon's discovery config: %q\n%v", bad, d)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a safety net
	defer cancel()
	if err := c.Send(ctx, transition(breaker.Open), nil); err != nil {
		t.Fatal(err)
	}
	sub.Wait(t, "fusebox/zigbee.bridge/state", "ON")
	// The broker forgets the state (a restart without persistence), and
	// the connection drops without a word.
	if _, err := sub.Client.Publish(ctx, &paho.Publish{Topic: "fusebox/zigbee.bridge/state", Retain: true, QoS: 1}); err != nil {
		t.Fatal(err)
	}
	sub.Wait(t, "fusebox/zigbee.bridge/state", "")
	proxy.cut()
	sub.Wait(t, serve, "offline")
	sub.Wait(t, serve, "online")
	sub.Wait(t, "fusebox/zigbee.bridge/state", "ON")

	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	sub.Wait(t, serve, "offline")
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logs.String(), "connection lost") {
		t.Errorf("the lost connection is not logged:\n%s", logs.String())
	}
}

// A broker that is down when the daemon starts: the held connection keeps
// trying, a transition meanwhile returns at once and goes out once the
// broker answers.
func TestConnCatchesUpWithABrokerThatComesLate(t *testing.T) {
	port := testenv.FreePort(t) // nothing listens there yet
	late := "127.0.0.1:" + strconv.Itoa(port)
	cfg := notify.MQTT{Broker: "tcp://" + late, Prefix: "fusebox", Instance: "nas"}
	c, err := mqtt.Dial(cfg, origin, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if err := c.Send(context.Background(), transition(breaker.Open), nil); err != nil {
		t.Fatalf("Send with no broker yet: %v", err)
	}
	addr := testenv.MosquittoOn(t, port)
	sub := testenv.Subscribe(t, addr, "fusebox/#")
	sub.Wait(t, "fusebox/serve/nas/availability", "online")
	sub.Wait(t, "fusebox/zigbee.bridge/state", "ON")
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A reloaded config that names another instance (or broker): the pool
// connects for it and says offline for the one it no longer names.
func TestPoolFollowsTheConfig(t *testing.T) {
	addr := testenv.Mosquitto(t)
	sub := testenv.Subscribe(t, addr, "fusebox/serve/#")
	p := mqtt.NewPool(origin, nil)
	a := notify.MQTT{Broker: "tcp://" + addr, Prefix: "fusebox", Instance: "a"}
	b := a
	b.Instance = "b"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a safety net
	defer cancel()
	p.Use(ctx, []notify.MQTT{a, a})
	sub.Wait(t, "fusebox/serve/a/availability", "online")
	if k := p.ForRules("x", notify.Rules{MQTT: &a}); k == nil || k != p.ForRules("y", notify.Rules{MQTT: &a}) {
		t.Errorf("two circuits of one broker config get %v and another", k)
	}
	if k := p.ForRules("x", notify.Rules{}); k != nil {
		t.Errorf("rules without a broker get %v", k)
	}
	p.Use(ctx, []notify.MQTT{b})
	sub.Wait(t, "fusebox/serve/a/availability", "offline")
	sub.Wait(t, "fusebox/serve/b/availability", "online")
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	sub.Wait(t, "fusebox/serve/b/availability", "offline")
	if k := p.ForRules("x", notify.Rules{MQTT: &a}); k != nil {
		t.Errorf("a closed pool connects again: %v", k)
	}
}
