package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/internal/doctext"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// press publishes payload, not retained, on topic, as a Home Assistant
// button does.
func (p publisher) press(t testing.TB, topic, payload string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := p.c.Publish(ctx, &paho.Publish{Topic: topic, Payload: []byte(payload), QoS: 1}); err != nil {
		t.Fatalf("publish %s: %v", topic, err)
	}
}

// discovered waits for the discovery config at topic, as sub hears it:
// the daemon announces its circuits one after another, so one circuit's
// phase is no sign that another's entities are out yet.
func discovered(t *testing.T, sub *testenv.MQTTSubscriber, topic string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(sub.Wait(t, topic, "").Payload, &m); err != nil {
		t.Fatalf("discovery at %s: %v", topic, err)
	}
	return m
}

// lastReason is the reason of the circuit's last event in the store.
func lastReason(t *testing.T, store *file.Store, name string) (string, int) {
	t.Helper()
	events, err := store.Events(context.Background(), name, time.Time{})
	if err != nil || len(events) == 0 {
		t.Fatalf("events of %s: %v, %d", name, err, len(events))
	}
	n := 0
	for _, e := range events {
		if strings.HasSuffix(e.Reason, "by MQTT") || strings.Contains(e.Reason, "by MQTT for") {
			n++
		}
	}
	return events[len(events)-1].Reason, n
}

// Home Assistant's buttons over a real mosquitto: the daemon publishes a
// reset and a trip button and a phase sensor per circuit (retained, at
// start); a press of each changes the circuit in the store as `fusebox
// reset` and `fusebox trip --for` do, the event log saying MQTT, and the
// sensor follows; presses for an unknown circuit, malformed ones and a
// burst change nothing beyond one applied press and log a line each at
// most.
func TestServeAppliesHomeAssistantPressesOverMQTT(t *testing.T) {
	addr := testenv.Mosquitto(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cfgText := fmt.Sprintf(`defaults:
  notify:
    mqtt: {broker: 'tcp://%s', instance: test, controls: true, controls_trip_for: 20m}
circuits:
  bridge: {attempts: 1, trip_after: 1}
  plug: {attempts: 1, trip_after: 1}
  nas: {attempts: 1, trip_after: 1}
`, addr)
	env := writeConfig(t, dir, cfgText)
	for _, name := range []string{"bridge", "plug", "nas"} {
		if p := fbEnv(t, state, env, "run", name, "--", "false"); p.Code != 1 {
			t.Fatalf("run %s: exit %d", name, p.Code)
		}
	}
	store, err := file.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	sub := testenv.Subscribe(t, addr, "fusebox/#")
	hass := testenv.Subscribe(t, addr, "homeassistant/#")
	d := startServe(t, state, filepath.Join(dir, "config.yaml"))

	// At start: the entities, and the phase as it is.
	sub.Wait(t, "fusebox/bridge/phase", "open")
	reset := discovered(t, hass, "homeassistant/button/fusebox_test/circuit_bridge_reset/config")
	trip := discovered(t, hass, "homeassistant/button/fusebox_test/circuit_plug_trip/config")
	sensor := discovered(t, hass, "homeassistant/sensor/fusebox_test/circuit_bridge/config")
	if sensor["state_topic"] != "fusebox/bridge/phase" || sensor["json_attributes_topic"] != "fusebox/bridge/phase/attributes" {
		t.Errorf("the sensor reads %v and %v", sensor["state_topic"], sensor["json_attributes_topic"])
	}
	var attrs map[string]any
	json.Unmarshal(sub.Wait(t, "fusebox/bridge/phase/attributes", "").Payload, &attrs)
	if attrs["failures"] != 1.0 || attrs["last_failure"] == nil || attrs["open_until"] == nil || attrs["reason"] == nil {
		t.Errorf("the open circuit's attributes: %v", attrs)
	}
	command := reset["command_topic"].(string)
	if command != "fusebox/serve/test/command" || trip["command_topic"] != command {
		t.Fatalf("command topics %v and %v", reset["command_topic"], trip["command_topic"])
	}
	pub := newPublisher(t, addr)

	pub.press(t, command, reset["payload_press"].(string))
	waitPhase(t, store, "bridge", breaker.Closed, "a reset pressed")
	sub.Wait(t, "fusebox/bridge/phase", "closed")
	if r, _ := lastReason(t, store, "bridge"); r != "reset by MQTT" {
		t.Errorf("the reset's event says %q, want it by MQTT", r)
	}

	// (Another circuit: a second press within 5s on one is refused.)
	pub.press(t, command, trip["payload_press"].(string))
	st := waitPhase(t, store, "plug", breaker.ForcedOpen, "a trip pressed")
	sub.Wait(t, "fusebox/plug/phase", "tripped")
	if r, _ := lastReason(t, store, "plug"); r != "tripped by MQTT for 20m0s" || time.Duration(st.OpenPeriod) != 20*time.Minute {
		t.Errorf("the trip's event says %q, its period %s; want by MQTT for 20m", r, time.Duration(st.OpenPeriod))
	}

	// What changes nothing: presses for a circuit the daemon does not
	// know, malformed ones, then a burst on nas, of which one applies.
	for range 5 {
		pub.press(t, command, `{"circuit":"nosuch","press":"reset"}`)
		pub.press(t, command, `PRESS`)
	}
	start := time.Now()
	for range 10 {
		pub.press(t, command, `{"circuit":"nas","press":"reset"}`)
	}
	burst := time.Since(start)
	waitPhase(t, store, "nas", breaker.Closed, "a reset pressed ten times")
	testenv.WaitFor(t, "the daemon refusing the burst's second press", func() bool {
		return len(d.Stderr.Lines("within 5s of the last one")) > 0
	})
	d.Signal(t, syscall.SIGTERM)
	if code := d.Wait(t); code != 0 {
		t.Fatalf("serve exited %d: %s", code, d.Stderr)
	}
	_, applied := lastReason(t, store, "nas")
	if most := 1 + int(burst/(5*time.Second)); applied < 1 || applied > most {
		t.Errorf("a burst of 10 presses published in %s applied %d, want 1 to %d (one per 5s)", burst, applied, most)
	}
	if st := phaseOf(t, store, "plug"); st.Phase != breaker.ForcedOpen {
		t.Errorf("plug is %s after presses for other circuits, want still tripped", st.Phase)
	}
	if names, _ := store.Names(context.Background()); len(names) != 3 {
		t.Errorf("the store holds %q after a press for an unknown circuit", names)
	}
	for _, line := range []string{"does not know", "not a fusebox command", "within 5s of the last one"} {
		if n := len(d.Stderr.Lines(line)); n != 1 {
			t.Errorf("%d lines %q, want one:\n%s", n, line, d.Stderr)
		}
	}
}

// aclOfDocs is the mosquitto ACL for the controls in docs/notify.md, as
// written.
func aclOfDocs(t *testing.T) string {
	t.Helper()
	return doctext.Block(t, "docs/notify.md", "text", "user fusebox")
}

// dialAs connects to the broker at addr as user.
func dialAs(t *testing.T, addr, user, password string, heard func(*paho.Publish)) publisher {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg := paho.ClientConfig{Conn: conn, OnClientError: func(error) {}}
	if heard != nil {
		cfg.OnPublishReceived = []func(paho.PublishReceived) (bool, error){func(r paho.PublishReceived) (bool, error) {
			heard(r.Packet)
			return true, nil
		}}
	}
	c := paho.NewClient(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Connect(ctx, &paho.Connect{ClientID: "test-" + user, CleanStart: true, KeepAlive: 30,
		Username: user, UsernameFlag: true, Password: []byte(password), PasswordFlag: true}); err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(func() { c.Disconnect(&paho.Disconnect{}) })
	return publisher{c}
}

// The ACL of docs/notify.md, as written, on a mosquitto that lets no one in
// anonymously: Home Assistant's user presses, another user's press never
// reaches the daemon.
func TestServeTakesPressesOnlyFromWhomTheDocsACLAllows(t *testing.T) {
	if _, err := exec.LookPath("mosquitto_passwd"); err != nil {
		testenv.Skip(t, "no mosquitto_passwd to make the broker's password file (apt-get install mosquitto)")
	}
	dir := t.TempDir()
	passwd, acl := filepath.Join(dir, "passwd"), filepath.Join(dir, "acl")
	for i, user := range []string{"fusebox", "homeassistant", "guest"} {
		args := []string{"-b", passwd, user, user + "-pw"}
		if i == 0 {
			args = append([]string{"-c"}, args...)
		}
		if out, err := exec.Command("mosquitto_passwd", args...).CombinedOutput(); err != nil {
			t.Fatalf("mosquitto_passwd %s: %v: %s", user, err, out)
		}
	}
	if err := os.WriteFile(acl, []byte(aclOfDocs(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	// mosquitto started as root runs as the mosquitto user: it must read them.
	for _, p := range []string{filepath.Dir(dir), dir, passwd, acl} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	addr := testenv.StartMosquittoWith(t, testenv.FreePort(t),
		fmt.Sprintf("allow_anonymous false\npassword_file %s\nacl_file %s\n", passwd, acl)).Addr
	state := filepath.Join(dir, "state")
	env := writeConfig(t, dir, fmt.Sprintf(`defaults:
  notify:
    mqtt: {broker: 'tcp://%s', username: fusebox, password: fusebox-pw, instance: nas, controls: true}
circuits:
  bridge: {attempts: 1, trip_after: 1}
  plug: {attempts: 1, trip_after: 1}
`, addr))
	for _, name := range []string{"bridge", "plug"} {
		if p := fbEnv(t, state, env, "run", name, "--", "false"); p.Code != 1 {
			t.Fatalf("run %s: exit %d", name, p.Code)
		}
	}
	store, err := file.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	phases := make(chan string, 16)
	ha := dialAs(t, addr, "homeassistant", "homeassistant-pw", func(p *paho.Publish) { phases <- string(p.Payload) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := ha.c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "fusebox/plug/phase", QoS: 1}}}); err != nil {
		t.Fatal(err)
	}
	startServe(t, state, filepath.Join(dir, "config.yaml"))
	select { // published once the daemon hears the command topic
	case p := <-phases:
		if p != "open" {
			t.Fatalf("plug's phase %q, want open", p)
		}
	case <-time.After(time.Minute):
		t.Fatal("Home Assistant's user heard no phase from the daemon in a minute: refused by the ACL, or not published")
	}

	guest := dialAs(t, addr, "guest", "guest-pw", nil)
	// The broker refuses it (MQTT v5's PUBACK "not authorized"), or drops it.
	_, err = guest.c.Publish(ctx, &paho.Publish{Topic: "fusebox/serve/nas/command", Payload: []byte(`{"circuit":"bridge","press":"reset"}`), QoS: 1})
	t.Logf("a guest's press: %v", err)
	ha.press(t, "fusebox/serve/nas/command", `{"circuit":"plug","press":"reset"}`)
	waitPhase(t, store, "plug", breaker.Closed, "Home Assistant's user pressed reset")
	if st := phaseOf(t, store, "bridge"); st.Phase != breaker.Open {
		t.Errorf("bridge is %s after a guest's press, want still open: the ACL let it through", st.Phase)
	}
}

// A trip pressed over MQTT never shortens a trip in force: on a circuit a
// person tripped until reset (maintenance) it changes nothing, and a timed
// trip shorter than the press's is lengthened to it. Before, the press
// turned the maintenance trip into 20 minutes.
func TestATripPressNeverShortensAManualTrip(t *testing.T) {
	addr := testenv.Mosquitto(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	env := writeConfig(t, dir, fmt.Sprintf(`defaults:
  notify:
    mqtt: {broker: 'tcp://%s', instance: test, controls: true, controls_trip_for: 20m}
circuits:
  nas: {attempts: 1}
  plug: {attempts: 1}
`, addr))
	if p := fbEnv(t, state, env, "trip", "nas"); p.Code != 0 {
		t.Fatalf("trip nas: exit %d: %s", p.Code, p.Stderr)
	}
	if p := fbEnv(t, state, env, "trip", "plug", "--for", "5m"); p.Code != 0 {
		t.Fatalf("trip plug: exit %d: %s", p.Code, p.Stderr)
	}
	store, err := file.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	hass := testenv.Subscribe(t, addr, "homeassistant/#")
	d := startServe(t, state, filepath.Join(dir, "config.yaml"))
	trip := discovered(t, hass, "homeassistant/button/fusebox_test/circuit_nas_trip/config")
	discovered(t, hass, "homeassistant/button/fusebox_test/circuit_plug_trip/config")
	pub := newPublisher(t, addr)
	pub.press(t, trip["command_topic"].(string), `{"circuit":"nas","press":"trip"}`)
	pub.press(t, trip["command_topic"].(string), `{"circuit":"plug","press":"trip"}`)
	// Presses are applied one at a time, in order: once plug's has, so has
	// nas's.
	testenv.WaitFor(t, "the daemon applying plug's press", func() bool {
		return time.Duration(phaseOf(t, store, "plug").OpenPeriod) == 20*time.Minute
	})
	d.Signal(t, syscall.SIGTERM)
	if code := d.Wait(t); code != 0 {
		t.Fatalf("serve exited %d: %s", code, d.Stderr)
	}
	if st := phaseOf(t, store, "nas"); st.Phase != breaker.ForcedOpen || st.OpenPeriod != 0 {
		t.Errorf("nas after a trip press: %s for %s; want still tripped until reset", st.Phase, time.Duration(st.OpenPeriod))
	}
	if r, n := lastReason(t, store, "nas"); r != "tripped by hand" || n != 0 {
		t.Errorf("nas's last event says %q (%d by MQTT); want the person's trip, untouched", r, n)
	}
	if st := phaseOf(t, store, "plug"); st.Phase != breaker.ForcedOpen || time.Duration(st.OpenPeriod) != 20*time.Minute {
		t.Errorf("plug tripped for 5m, after a 20m press: %s for %s; want 20m", st.Phase, time.Duration(st.OpenPeriod))
	}
}
