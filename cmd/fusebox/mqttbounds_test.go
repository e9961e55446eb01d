package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// peakRSS is the process's peak resident set (VmHWM), in bytes: the
// kernel keeps it, so a reading after the fact sees any peak before it.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Skipf("no /proc status to read the daemon's peak memory from: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// A 30 MB message on a watched topic (anyone on the LAN may publish one,
// retained) never reaches the daemon's memory: the broker drops it, as the
// daemon's CONNECT asked, the verdict stays what the messages before it
// left, and the daemon's peak memory grows by far less than the message.
func TestServeIgnoresA30MBMessageOnAWatchedTopic(t *testing.T) {
	broker := testenv.Mosquitto(t)
	pub := newPublisher(t, broker)
	pub.retain(t, bridgeTopic, `{"state":"offline"}`)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfigPath(t, dir, fmt.Sprintf(`mqtt: {broker: 'tcp://%s'}
circuits:
  zigbee:
    health:
      mqtt: {topic: %s, up: '.state == "online"'}
`, broker, bridgeTopic))
	store, err := file.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	d := startServe(t, state, cfg)
	waitPhase(t, store, "zigbee", fusebox.Open, "retained offline at connect")
	pub.retain(t, bridgeTopic, `{"state":"online"}`)
	waitPhase(t, store, "zigbee", fusebox.Closed, "online")
	before := peakRSS(t, d.cmd.Process.Pid)

	huge := make([]byte, 30<<20)
	for i := range huge {
		huge[i] = '['
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := pub.c.Publish(ctx, &paho.Publish{Topic: bridgeTopic, Payload: huge, Retain: true, QoS: 1}); err != nil {
		t.Fatalf("publish 30 MB: %v", err)
	}
	huge = nil
	// The messages of a topic arrive in order: once offline is judged, the
	// 30 MB one before it was dealt with.
	pub.retain(t, bridgeTopic, `{"state":"offline"}`)
	st := waitPhase(t, store, "zigbee", fusebox.Open, "offline after the 30 MB message")
	if want := `mqtt zigbee2mqtt/bridge/state: .state == "online" is false`; st.LastFailure != want {
		t.Errorf("last failure %q, want %q: the 30 MB message was judged", st.LastFailure, want)
	}
	after := peakRSS(t, d.cmd.Process.Pid)
	t.Logf("the daemon's peak RSS: %d MiB before the 30 MB message, %d MiB after", before>>20, after>>20)
	if grew := after - before; grew > 64<<20 {
		t.Errorf("a 30 MB message grew the daemon's peak RSS by %d MiB (from %d MiB), want at most 64", grew>>20, before>>20)
	}
}
