package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/internal/doctext"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

const bridgeTopic = "zigbee2mqtt/bridge/state"

// mqttHealthConfig watches the Zigbee2MQTT bridge's state (JSON) and a
// plug's availability (plain text).
func mqttHealthConfig(broker string) string {
	return fmt.Sprintf(`mqtt: {broker: 'tcp://%s'}
circuits:
  zigbee:
    health:
      mqtt: {topic: %s, up: '.state == "online"'}
  plug:
    health:
      mqtt: {topic: home/plug/availability, up: '. == "online"'}
`, broker, bridgeTopic)
}

// publisher publishes retained messages to a broker, as Zigbee2MQTT does
// its bridge state.
type publisher struct{ c *paho.Client }

func newPublisher(t testing.TB, addr string) publisher {
	return publisher{testenv.Subscribe(t, addr, "unused/topic").Client}
}

func (p publisher) retain(t testing.TB, topic, payload string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := p.c.Publish(ctx, &paho.Publish{Topic: topic, Payload: []byte(payload), Retain: true, QoS: 1}); err != nil {
		t.Fatalf("publish %s: %v", topic, err)
	}
}

// phaseOf reads the circuit's stored phase, as a run would see it.
func phaseOf(t testing.TB, store *file.Store, name string) breaker.State {
	t.Helper()
	st, err := store.Load(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func waitPhase(t *testing.T, store *file.Store, name string, want breaker.Phase, why string) breaker.State {
	t.Helper()
	var st breaker.State
	testenv.WaitFor(t, fmt.Sprintf("%s: circuit %s %s (the daemon did not judge the message, or did not store the verdict)", why, name, want), func() bool {
		st = phaseOf(t, store, name)
		return st.View(breaker.Instant{Wall: time.Now()}).Phase == want
	})
	return st
}

// A daemon watching the bridge's state opens the circuit from the
// retained offline it hears at connect, so a cron run skips without
// asking the bridge; the bridge back online, the next run runs; the
// broker killed and started again changes nothing, and the subscription
// is taken again; a plain-text message is judged as a JSON string; only
// transitions are stored.
func TestServeWatchesTheBridgeStateOverMQTT(t *testing.T) {
	t.Parallel() // waits on processes and timers: it runs beside the others
	port := testenv.FreePort(t)
	broker := testenv.StartMosquitto(t, port)
	pub := newPublisher(t, broker.Addr)
	pub.retain(t, bridgeTopic, `{"state":"offline"}`)
	pub.retain(t, "home/plug/availability", "offline")

	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cfg := writeConfigPath(t, dir, mqttHealthConfig(broker.Addr))
	env := []string{"FUSEBOX_CONFIG=" + cfg}
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	store, err := file.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	d := startServe(t, state, cfg)

	st := waitPhase(t, store, "zigbee", breaker.Open, "retained offline at connect")
	if want := `mqtt zigbee2mqtt/bridge/state: .state == "online" is false`; st.LastFailure != want {
		t.Errorf("last failure %q, want %q", st.LastFailure, want)
	}
	waitPhase(t, store, "plug", breaker.Open, "retained plain-text offline")
	marker := filepath.Join(dir, "ran")
	if p := fbEnv(t, state, env, "run", "zigbee", "--", "touch", marker); p.Code != exitOpen {
		t.Fatalf("run while the bridge is offline: exit %d, want %d (skipped)\n%s", p.Code, exitOpen, p.Stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran while the bridge was offline")
	}

	pub.retain(t, bridgeTopic, `{"state":"online"}`)
	waitPhase(t, store, "zigbee", breaker.Closed, "online")
	if p := fbEnv(t, state, env, "run", "zigbee", "--", "touch", marker); p.Code != 0 {
		t.Fatalf("run once the bridge is back: exit %d\n%s", p.Code, p.Stderr)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("the command did not run once the bridge was back")
	}
	pub.retain(t, "home/plug/availability", "online")
	waitPhase(t, store, "plug", breaker.Closed, "plain-text online")

	pub.retain(t, bridgeTopic, `{"state":"offline"}`)
	waitPhase(t, store, "zigbee", breaker.Open, "offline again")
	before := phaseOf(t, store, "zigbee")
	broker.Stop()
	testenv.WaitFor(t, "the daemon's warning that the broker connection was lost", func() bool {
		return strings.Contains(d.Stderr.String(), "connection lost")
	})
	if after := phaseOf(t, store, "zigbee"); after.Generation != before.Generation || after.Phase != breaker.Open {
		t.Fatalf("losing the broker moved the circuit: %+v, was %+v", after, before)
	}
	broker = testenv.StartMosquitto(t, port) // empty: it forgot the retained offline
	pub = newPublisher(t, broker.Addr)
	pub.retain(t, bridgeTopic, `{"state":"online"}`)
	waitPhase(t, store, "zigbee", breaker.Closed, "online on the restarted broker")
	if n := strings.Count(d.Stderr.String(), "level=WARN msg=\"mqtt:"); n != 1 {
		t.Errorf("the lost broker logged %d mqtt warnings, want 1:\n%s", n, d.Stderr.String())
	}

	// The file store writes the state, then appends its events, under the
	// circuit's lock: a Load may see the closing before its event is in the
	// log, so the log is waited for, not read once.
	transitions := func() string {
		events, err := store.Events(context.Background(), "zigbee", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		var tr []string
		for _, e := range events {
			if e.Kind == breaker.EventTransition {
				tr = append(tr, string(e.To))
			}
		}
		return strings.Join(tr, " ")
	}
	const want = "open closed open closed"
	testenv.WaitFor(t, "the transitions "+want+" in the event log", func() bool { return len(transitions()) >= len(want) })
	if got := transitions(); got != want {
		t.Errorf("transitions stored: %s, want %s (only transitions are written)", got, want)
	}
}

// A bad up: condition is a config error naming the file and line, and the
// daemon does not start.
func TestServeRefusesABadMQTTHealthCondition(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfigPath(t, dir, `mqtt: {broker: 'tcp://127.0.0.1:1883'}
circuits:
  zigbee:
    health:
      mqtt: {topic: zigbee2mqtt/bridge/state, up: '.state =='}
`)
	p := fbEnv(t, filepath.Join(dir, "state"), []string{"FUSEBOX_CONFIG=" + cfg}, "serve", "--listen", "127.0.0.1:0")
	if p.Code == 0 || !strings.Contains(p.Stderr, "config.yaml:5:") || !strings.Contains(p.Stderr, "circuits.zigbee.health.mqtt.up") {
		t.Fatalf("serve with a bad up: exit %d, stderr %q: want a config error at config.yaml:5", p.Code, p.Stderr)
	}
	if lines := strings.Count(strings.TrimSpace(p.Stderr), "\n"); lines != 0 {
		t.Errorf("the error is %d lines, want one:\n%s", lines+1, p.Stderr)
	}
}

// While the bridge stays offline the daemon renews the open period before
// it ends, quietly (no transition, the generation kept), so that a run
// never finds the circuit half-open and probes a bridge known to be down.
func TestServeRenewsTheOpenPeriodWhileTheBridgeIsOffline(t *testing.T) {
	t.Parallel() // waits on processes and timers: it runs beside the others
	broker := testenv.Mosquitto(t)
	pub := newPublisher(t, broker)
	pub.retain(t, bridgeTopic, `{"state":"offline"}`)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cfg := writeConfigPath(t, dir, fmt.Sprintf(`mqtt: {broker: 'tcp://%s'}
circuits:
  zigbee:
    open_for: 2s
    open_max: 2s
    health:
      mqtt: {topic: %s, up: '.state == "online"'}
`, broker, bridgeTopic))
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	store, err := file.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	startServe(t, state, cfg)
	first := waitPhase(t, store, "zigbee", breaker.Open, "retained offline")
	seen := first
	for range 2 { // renewed with half a second left: ample on a saturated machine
		prev := seen
		testenv.WaitFor(t, "the daemon renewing the open period", func() bool {
			seen = phaseOf(t, store, "zigbee")
			return seen.OpenedAt.Wall.After(prev.OpenedAt.Wall)
		})
		if seen.Phase != breaker.Open || seen.Generation != first.Generation {
			t.Fatalf("renewed state %+v: want open, generation %d kept", seen, first.Generation)
		}
	}
	events, err := store.Events(context.Background(), "zigbee", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 {
		t.Errorf("events %+v: want the one failure and the one opening", events)
	}
}

// docs/serve.md's trip and reset of the watched bridge, over the daemon's
// API, while the bridge is online: the watch has stored nothing (it writes
// transitions only), and the API still knows the circuit from the config,
// as fusebox trip does. The trip wins over the watch's online.
func TestServeTripsAWatchedCircuitBeforeItHasState(t *testing.T) {
	d, _, _, store := watchingServe(t, `{"state":"online"}`, "")
	if code, _, body := d.Post(t, "/api/circuits/zigbee/trip?for=10m"); code != 200 || !strings.Contains(body, `"forced_open"`) {
		t.Fatalf("trip of the watched circuit: %d %s", code, body)
	}
	waitPhase(t, store, "zigbee", breaker.ForcedOpen, "tripped over the API")
	if code, _, body := d.Post(t, "/api/circuits/zigbee/reset"); code != 200 || !strings.Contains(body, `"closed"`) {
		t.Fatalf("reset of the watched circuit: %d %s", code, body)
	}
	if code, _, body := d.Post(t, "/api/circuits/zigbe/trip"); code != 404 {
		t.Errorf("trip of a name the config does not have: %d %s, want 404", code, body)
	}
}

// Every bridge watch the pages show (README.md and docs/*.md) reads both
// forms Zigbee2MQTT publishes its bridge state in: 2.x's JSON and 1.x's
// plain text (its default legacy_availability_payload: true), from a real
// broker.
func TestTheDocumentedBridgeWatchReadsZigbee2MQTT1xAnd2x(t *testing.T) {
	watch := regexp.MustCompile(`topic: zigbee2mqtt/bridge/state, up: '([^']+)'`)
	var ups []string
	for _, page := range doctext.Pages(t) {
		for _, m := range watch.FindAllStringSubmatch(doctext.Read(t, page), -1) {
			if !slices.Contains(ups, m[1]) {
				ups = append(ups, m[1])
			}
		}
	}
	if len(ups) == 0 {
		t.Fatal("no page has a health: mqtt: watch of zigbee2mqtt/bridge/state")
	}
	for _, up := range ups {
		t.Run(up, func(t *testing.T) { checkBridgeWatch(t, up) })
	}
}

// checkBridgeWatch runs a daemon watching the bridge with up and publishes
// each form of the bridge's state.
func checkBridgeWatch(t *testing.T, up string) {
	port := testenv.FreePort(t)
	broker := testenv.StartMosquitto(t, port)
	pub := newPublisher(t, broker.Addr)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfigPath(t, dir, fmt.Sprintf(`mqtt: {broker: 'tcp://%s'}
circuits:
  zigbee2mqtt:
    health:
      mqtt: {topic: %s, up: '%s', settle: 0s}
`, broker.Addr, bridgeTopic, up))
	store, err := file.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	startServe(t, state, cfg)
	for _, step := range []struct {
		payload string
		want    breaker.Phase
	}{
		{"offline", breaker.Open}, // 1.x
		{"online", breaker.Closed},
		{`{"state":"offline"}`, breaker.Open}, // 2.x
		{`{"state":"online"}`, breaker.Closed},
		{"offline", breaker.Open},
		{`{"state":"online","reason":"restart"}`, breaker.Closed},
	} {
		pub.retain(t, bridgeTopic, step.payload)
		waitPhase(t, store, "zigbee2mqtt", step.want, fmt.Sprintf("%s judged with %s", step.payload, up))
	}
}
