package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// retainedOn returns the retained payload of topic on the broker at addr.
func retainedOn(t *testing.T, addr, topic string) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	c := paho.NewClient(paho.ClientConfig{Conn: conn, OnPublishReceived: []func(paho.PublishReceived) (bool, error){
		func(r paho.PublishReceived) (bool, error) {
			select {
			case got <- string(r.Packet.Payload):
			default:
			}
			return true, nil
		},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Connect(ctx, &paho.Connect{ClientID: "cli-test", CleanStart: true, KeepAlive: 30}); err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(&paho.Disconnect{})
	if _, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: topic, QoS: 1}}}); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		return s
	case <-ctx.Done():
		t.Fatalf("nothing retained on %s", topic)
		return ""
	}
}

func TestRunPublishesTheCircuitStateToMQTT(t *testing.T) {
	addr := testenv.Mosquitto(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	env := writeConfig(t, dir, fmt.Sprintf(`defaults:
  notify:
    mqtt: {broker: 'tcp://%s'}
circuits:
  bridge: {attempts: 1, trip_after: 1}
`, addr))
	if p := fbEnv(t, state, env, "run", "bridge", "--", "false"); p.code != 1 || p.stderr == "" {
		t.Fatalf("run: exit %d", p.code)
	}
	if got := retainedOn(t, addr, "fusebox/bridge/state"); got != "ON" {
		t.Errorf("state after the opening = %q, want ON", got)
	}
	if got := retainedOn(t, addr, "homeassistant/binary_sensor/fusebox_bridge/config"); got == "" {
		t.Error("no discovery config")
	}
	fbEnv(t, state, env, "reset", "bridge")
	if got := retainedOn(t, addr, "fusebox/bridge/state"); got != "OFF" {
		t.Errorf("state after the reset = %q, want OFF", got)
	}
}
