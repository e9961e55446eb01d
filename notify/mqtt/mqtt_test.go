package mqtt_test

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"go.uber.org/goleak"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/notify"
	"github.com/fusebox-hq/fusebox/notify/mqtt"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// subscriber is a client of the broker that keeps the last message of each
// topic it hears.
type subscriber struct {
	mu     sync.Mutex
	msgs   map[string]*paho.Publish
	got    chan struct{}
	client *paho.Client
}

func subscribe(t *testing.T, addr, filter string) *subscriber {
	t.Helper()
	s := &subscriber{msgs: map[string]*paho.Publish{}, got: make(chan struct{}, 100)}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s.client = paho.NewClient(paho.ClientConfig{Conn: conn, OnPublishReceived: []func(paho.PublishReceived) (bool, error){
		func(r paho.PublishReceived) (bool, error) {
			s.mu.Lock()
			s.msgs[r.Packet.Topic] = r.Packet
			s.mu.Unlock()
			s.got <- struct{}{}
			return true, nil
		},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.client.Connect(ctx, &paho.Connect{ClientID: "test-subscriber", CleanStart: true, KeepAlive: 30}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.client.Disconnect(&paho.Disconnect{}) })
	if _, err := s.client.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}}}); err != nil {
		t.Fatal(err)
	}
	return s
}

// wait returns the message of topic once it has one whose payload is want
// ("" for any).
func (s *subscriber) wait(t *testing.T, topic, want string) *paho.Publish {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		m := s.msgs[topic]
		s.mu.Unlock()
		if m != nil && (want == "" || string(m.Payload) == want) {
			return m
		}
		select {
		case <-s.got:
		case <-timeout:
			t.Fatalf("no message %q on %s", want, topic)
		}
	}
}

func transition(to fusebox.Phase) fusebox.Event {
	t0 := time.Date(2026, 3, 1, 6, 15, 0, 0, time.UTC)
	return fusebox.Event{Time: t0.Add(20 * time.Second), Circuit: "zigbee.bridge", Kind: fusebox.EventTransition, From: fusebox.Closed, To: to, Reason: "3 consecutive failures", Since: t0}
}

func TestHomeAssistantDiscoveryAndRetainedState(t *testing.T) {
	addr := testenv.Mosquitto(t)
	cfg := notify.MQTT{Broker: "tcp://" + addr, Prefix: "fusebox", Discovery: "homeassistant"}
	sink := mqtt.New(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sink.Send(ctx, transition(fusebox.Open), nil); err != nil {
		t.Fatal(err)
	}
	// A subscriber that comes later gets the retained messages.
	sub := subscribe(t, addr, "#")
	disc := sub.wait(t, "homeassistant/binary_sensor/fusebox_zigbee_bridge/config", "")
	if !disc.Retain {
		t.Error("the discovery config is not retained")
	}
	var d map[string]any
	if err := json.Unmarshal(disc.Payload, &d); err != nil {
		t.Fatal(err)
	}
	// Home Assistant's MQTT binary_sensor schema.
	for key, want := range map[string]any{
		"unique_id": "fusebox_zigbee_bridge", "device_class": "problem", "state_topic": "fusebox/zigbee.bridge/state",
		"payload_on": "ON", "payload_off": "OFF", "availability_topic": "fusebox/zigbee.bridge/availability",
		"payload_available": "online", "payload_not_available": "offline", "json_attributes_topic": "fusebox/zigbee.bridge/attributes",
		"name": "zigbee.bridge",
	} {
		if d[key] != want {
			t.Errorf("discovery %s = %v, want %v", key, d[key], want)
		}
	}
	if dev, _ := d["device"].(map[string]any); dev == nil || len(dev["identifiers"].([]any)) != 1 {
		t.Errorf("discovery device = %v", d["device"])
	}
	if m := sub.wait(t, "fusebox/zigbee.bridge/state", "ON"); !m.Retain {
		t.Error("the state is not retained")
	}
	sub.wait(t, "fusebox/zigbee.bridge/availability", "online")
	var attrs mqtt.Attributes
	json.Unmarshal(sub.wait(t, "fusebox/zigbee.bridge/attributes", "").Payload, &attrs)
	if attrs.State != fusebox.Open || attrs.Since.IsZero() {
		t.Errorf("attributes = %+v", attrs)
	}

	if err := sink.Send(ctx, transition(fusebox.Closed), nil); err != nil {
		t.Fatal(err)
	}
	sub.wait(t, "fusebox/zigbee.bridge/state", "OFF")
}

func TestLastWillMarksTheStateUnavailable(t *testing.T) {
	addr := testenv.Mosquitto(t)
	sub := subscribe(t, addr, "fusebox/#")
	// A process that connects with the sink's will and dies before it
	// disconnects: the broker publishes the will.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := paho.NewClient(paho.ClientConfig{Conn: conn, OnClientError: func(error) {}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	topics := mqtt.TopicsOf(notify.MQTT{Prefix: "fusebox"}, "nas")
	if _, err := c.Connect(ctx, &paho.Connect{ClientID: "dying", CleanStart: true, KeepAlive: 30,
		WillMessage: &paho.WillMessage{Topic: topics.Availability, Payload: []byte(mqtt.Offline), Retain: true, QoS: 1}}); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	sub.wait(t, "fusebox/nas/availability", "offline")
}

func TestADownBrokerFailsFast(t *testing.T) {
	port := testenv.FreePort(t)
	sink := mqtt.New(notify.MQTT{Broker: "tcp://127.0.0.1:" + strconv.Itoa(port), Prefix: "fusebox"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := sink.Send(ctx, transition(fusebox.Open), nil); err == nil {
		t.Fatal("Send to a closed port succeeded")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a refused connection took %s", took)
	}
}

func TestABrokerThatSaysNothingIsGivenUpAtTheDeadline(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	sink := mqtt.New(notify.MQTT{Broker: "tcp://" + l.Addr().String(), Prefix: "fusebox"})
	const bound = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	start := time.Now()
	if err := sink.Send(ctx, transition(fusebox.Open), nil); err == nil {
		t.Fatal("Send to a silent broker succeeded")
	}
	if took := time.Since(start); took > bound+2*time.Second {
		t.Errorf("a silent broker held Send for %s, bound %s", took, bound)
	}
}
