package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// peakRSS is the process's peak resident set (VmHWM), in bytes: the
// kernel keeps it, so a reading after the fact sees any peak before it.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	hwm := testenv.StatusField(pid, "VmHWM")
	if hwm == 0 {
		testenv.Skip(t, "no VmHWM in /proc/%d/status to read the daemon's peak memory from", pid)
	}
	return hwm
}

// A 30 MB message on a watched topic (anyone on the LAN may publish one,
// retained) never reaches the daemon's memory: the broker drops it, as the
// daemon's CONNECT asked, the verdict stays what the messages before it
// left, and the daemon's peak memory grows by far less than the message.
func TestServeIgnoresA30MBMessageOnAWatchedTopic(t *testing.T) {
	testenv.Heavy(t) // 30 MB messages; the soak is the rest of this class
	t.Parallel()
	d, _, pub, store := watchingServe(t, `{"state":"offline"}`, "")
	waitPhase(t, store, "zigbee", breaker.Open, "retained offline at connect")
	pub.retain(t, bridgeTopic, `{"state":"online"}`)
	waitPhase(t, store, "zigbee", breaker.Closed, "online")
	before := peakRSS(t, d.Cmd.Process.Pid)

	huge := make([]byte, 30<<20)
	for i := range huge {
		huge[i] = '['
	}
	// The broker reads 30 MB slowly on a loaded machine (over a minute at
	// a load of 30 on 2 cores): the bound is generous, and says which it was.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := pub.c.Publish(ctx, &paho.Publish{Topic: bridgeTopic, Payload: huge, Retain: true, QoS: 1}); err != nil {
		t.Fatalf("publish 30 MB: the broker did not acknowledge it within 5 minutes (timed out, nothing judged yet): %v", err)
	}
	huge = nil
	// The messages of a topic arrive in order: once offline is judged, the
	// 30 MB one before it was dealt with.
	pub.retain(t, bridgeTopic, `{"state":"offline"}`)
	st := waitPhase(t, store, "zigbee", breaker.Open, "offline after the 30 MB message")
	if want := `mqtt zigbee2mqtt/bridge/state: .state == "online" is false`; st.LastFailure != want {
		t.Errorf("last failure %q, want %q: the 30 MB message was judged", st.LastFailure, want)
	}
	after := peakRSS(t, d.Cmd.Process.Pid)
	t.Logf("the daemon's peak RSS: %d MiB before the 30 MB message, %d MiB after", before>>20, after>>20)
	if grew := after - before; grew > 64<<20 {
		t.Errorf("a 30 MB message grew the daemon's peak RSS by %d MiB (from %d MiB), want at most 64", grew>>20, before>>20)
	}
}

// flap publishes n messages on topic, offline and online in turn (offline
// first), one every 16 ms: a publisher flapping a bridge's state.
func flap(t *testing.T, pub publisher, topic string, n int) {
	t.Helper()
	tick := time.NewTicker(16 * time.Millisecond)
	defer tick.Stop()
	for i := range n {
		state := "offline"
		if i%2 == 1 {
			state = "online"
		}
		pub.retain(t, topic, `{"state":"`+state+`"}`)
		<-tick.C
	}
}

// watchingServe starts a daemon watching the bridge, whose state is first
// retained, with the given watch keys (", settle: 0s") and notifying a
// webhook of every opening and closing.
func watchingServe(t *testing.T, retained, keys string) (*testenv.Daemon, *hookServer, publisher, *file.Store) {
	broker := testenv.Mosquitto(t)
	hooks := newHookServer(t)
	pub := newPublisher(t, broker)
	pub.retain(t, bridgeTopic, retained)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfigPath(t, dir, fmt.Sprintf(`mqtt: {broker: 'tcp://%s'}
defaults:
  notify:
    after: 0s
    webhooks: [{url: '%s/hook'}]
circuits:
  zigbee:
    health:
      mqtt: {topic: %s, up: '.state == "online"'%s}
`, broker, hooks.URL, bridgeTopic, keys))
	store, err := file.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return startServe(t, state, cfg), hooks, pub, store
}

// flapped runs the attack, 250 flaps in 4 s, on a daemon whose
// watch has keys, then an offline that holds; once the circuit is open
// and told (the webhook's messages so far), it stops the daemon, which
// delivers what is queued, and returns the messages and the events.
func flapped(t *testing.T, keys string, told func([]string) bool) ([]string, []breaker.Event) {
	d, hooks, pub, store := watchingServe(t, `{"state":"online"}`, keys)
	flap(t, pub, bridgeTopic, 250)
	pub.retain(t, bridgeTopic, `{"state":"offline"}`)
	waitPhase(t, store, "zigbee", breaker.Open, "the offline after the flapping, held for the settle period")
	testenv.WaitFor(t, "the messages of the flapping", func() bool { return told(hooks.events(t)) })
	d.Signal(t, syscall.SIGTERM)
	if code := d.Wait(t); code != 0 {
		t.Fatalf("serve exited %d: %s", code, d.Stderr)
	}
	events, err := store.Events(context.Background(), "zigbee", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	got := hooks.events(t)
	t.Logf("250 flaps in 4 s, watch keys %q: %d messages (%q), %d events", keys, len(got), got, len(events))
	return got, events
}

// With the default settle period nothing holds long enough to apply, so
// the flaps write no event and send nothing; the offline that then holds
// opens the circuit, once: at most 10 messages and 50 events, as asked.
func TestServeAFlappingTopicFloodsNobody(t *testing.T) {
	testenv.Heavy(t) // a flood of flaps; TestServeAFlappingCircuitSendsASummaryNotAFlood is the quick one
	t.Parallel()
	got, events := flapped(t, "", func(got []string) bool { return len(got) >= 1 })
	if len(got) > 10 || len(events) > 50 {
		t.Errorf("250 flaps sent %d messages and wrote %d events, want at most 10 and 50", len(got), len(events))
	}
	if len(got) != 1 || got[0] != "zigbee opened" {
		t.Errorf("messages %q, want the one opening after the flapping", got)
	}
}

// With settle: 0s every verdict applies at once, so the flaps open and
// close the circuit; the messages stop at five and one saying it flaps.
func TestServeAFlappingCircuitSendsASummaryNotAFlood(t *testing.T) {
	t.Parallel() // waits on processes and timers: it runs beside the others
	got, _ := flapped(t, ", settle: 0s", func(got []string) bool { return slices.Contains(got, "zigbee flapping") })
	if len(got) != 6 || got[5] != "zigbee flapping" {
		t.Errorf("messages %q, want five and one saying it flaps", got)
	}
}
