package mqtt_test

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"go.uber.org/goleak"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/notify"
	"github.com/fusebox-hq/fusebox/notify/mqtt"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testenv.Exit)) }

func transition(to breaker.Phase) breaker.Event {
	t0 := time.Date(2026, 3, 1, 6, 15, 0, 0, time.UTC)
	return breaker.Event{Time: t0.Add(20 * time.Second), Circuit: "zigbee.bridge", Kind: breaker.EventTransition, From: breaker.Closed, To: to, Reason: "3 consecutive failures", Since: t0}
}

var origin = mqtt.Fusebox("v1.2.3")

func TestHomeAssistantDiscoveryAndRetainedState(t *testing.T) {
	addr := testenv.Mosquitto(t)
	cfg := notify.MQTT{Broker: "tcp://" + addr, Prefix: "fusebox", Discovery: "homeassistant", Instance: "nas"}
	// What fusebox published before it named the instance, to be cleared.
	legacy := "homeassistant/binary_sensor/fusebox_zigbee_bridge/config"
	sink := mqtt.New(cfg, origin)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a safety net: every step below waits on an event
	defer cancel()
	seed := testenv.Subscribe(t, addr, "nothing")
	if _, err := seed.Client.Publish(ctx, &paho.Publish{Topic: legacy, Payload: []byte(`{"name":"old"}`), Retain: true, QoS: 1}); err != nil {
		t.Fatal(err)
	}
	if err := sink.Send(ctx, transition(breaker.Open), nil); err != nil {
		t.Fatal(err)
	}
	// A subscriber that comes later gets the retained messages.
	sub := testenv.Subscribe(t, addr, "#")
	topic := "homeassistant/binary_sensor/fusebox_nas/circuit-zigbee_2ebridge/config"
	disc := sub.Wait(t, topic, "")
	if !disc.Retain {
		t.Error("the discovery config is not retained")
	}
	var d map[string]any
	if err := json.Unmarshal(disc.Payload, &d); err != nil {
		t.Fatal(err)
	}
	if bad := checkBinarySensor(topic, d); len(bad) > 0 {
		t.Errorf("the discovery config breaks Home Assistant's binary_sensor schema: %s\n%s", strings.Join(bad, "; "), disc.Payload)
	}
	for key, want := range map[string]any{
		"unique_id": "fusebox:nas:zigbee.bridge", "default_entity_id": "binary_sensor.fusebox_zigbee_bridge",
		"device_class": "problem", "state_topic": "fusebox/zigbee.bridge/state",
		"payload_on": "ON", "payload_off": "OFF", "availability_topic": "fusebox/zigbee.bridge/availability",
		"payload_available": "online", "payload_not_available": "offline", "json_attributes_topic": "fusebox/zigbee.bridge/attributes",
		"name": "zigbee.bridge",
	} {
		if d[key] != want {
			t.Errorf("discovery %s = %v, want %v", key, d[key], want)
		}
	}
	dev, _ := d["device"].(map[string]any)
	if ids, _ := dev["identifiers"].([]any); len(ids) != 1 || ids[0] != "fusebox:nas" {
		t.Errorf("discovery device = %v, want the identifier fusebox:nas", d["device"])
	}
	if o, _ := d["origin"].(map[string]any); o["name"] != "fusebox" || o["sw_version"] != "v1.2.3" || o["support_url"] == nil {
		t.Errorf("discovery origin = %v", d["origin"])
	}
	if m := sub.Wait(t, "fusebox/zigbee.bridge/state", "ON"); !m.Retain {
		t.Error("the state is not retained")
	}
	if got := testenv.Retained(t, addr, legacy); got != "" {
		t.Errorf("the discovery config without the instance is still retained: %s", got)
	}
	sub.Wait(t, "fusebox/zigbee.bridge/availability", "online")
	var attrs mqtt.Attributes
	json.Unmarshal(sub.Wait(t, "fusebox/zigbee.bridge/attributes", "").Payload, &attrs)
	if attrs.State != breaker.Open || attrs.Since.IsZero() {
		t.Errorf("attributes = %+v", attrs)
	}

	if err := sink.Send(ctx, transition(breaker.Closed), nil); err != nil {
		t.Fatal(err)
	}
	sub.Wait(t, "fusebox/zigbee.bridge/state", "OFF")
}

func TestLastWillMarksTheStateUnavailable(t *testing.T) {
	addr := testenv.Mosquitto(t)
	sub := testenv.Subscribe(t, addr, "fusebox/#")
	// A process that connects with the sink's will and dies before it
	// disconnects: the broker publishes the will.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := paho.NewClient(paho.ClientConfig{Conn: conn, OnClientError: func(error) {}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a safety net
	defer cancel()
	topics := mqtt.TopicsOf(notify.MQTT{Prefix: "fusebox"}, "nas")
	if _, err := c.Connect(ctx, &paho.Connect{ClientID: "dying", CleanStart: true, KeepAlive: 30,
		WillMessage: &paho.WillMessage{Topic: topics.Availability, Payload: []byte(mqtt.Offline), Retain: true, QoS: 1}}); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	sub.Wait(t, "fusebox/nas/availability", "offline")
}

func TestADownBrokerFailsFast(t *testing.T) {
	port := testenv.FreePort(t)
	sink := mqtt.New(notify.MQTT{Broker: "tcp://127.0.0.1:" + strconv.Itoa(port), Prefix: "fusebox"}, origin)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := sink.Send(ctx, transition(breaker.Open), nil); err == nil {
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
	sink := mqtt.New(notify.MQTT{Broker: "tcp://" + l.Addr().String(), Prefix: "fusebox"}, origin)
	const bound = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	start := time.Now()
	if err := sink.Send(ctx, transition(breaker.Open), nil); err == nil {
		t.Fatal("Send to a silent broker succeeded")
	}
	if took := time.Since(start); took > bound+2*time.Second {
		t.Errorf("a silent broker held Send for %s, bound %s", took, bound)
	}
}
