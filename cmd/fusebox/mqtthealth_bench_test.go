package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// BenchmarkMQTTOfflineToSkippedRun measures, on a real mosquitto and a
// daemon watching the bridge state, the time from publishing a retained
// offline to the end of the first fusebox run that skips: open_ms is
// until the store says open (polled every 200µs), skip_ms until a run
// started then has exited 75. Between rounds the bridge comes back
// online, untimed. The watch has settle: 0s: what is measured is the
// daemon's path, not the settle period a user chooses.
//
//	go test -run '^$' -bench MQTTOfflineToSkippedRun -benchtime 10x ./cmd/fusebox/
func BenchmarkMQTTOfflineToSkippedRun(b *testing.B) {
	broker := testenv.Mosquitto(b)
	pub := newPublisher(b, broker)
	pub.retain(b, bridgeTopic, `{"state":"online"}`)
	dir := b.TempDir()
	state := filepath.Join(dir, "state")
	cfg := writeConfigPath(b, dir, strings.ReplaceAll(mqttHealthConfig(broker), "'}", "', settle: 0s}"))
	if err := os.MkdirAll(state, 0o700); err != nil {
		b.Fatal(err)
	}
	store, err := file.Open(state)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	startServe(b, state, cfg)
	until := func(want breaker.Phase) {
		deadline := time.Now().Add(time.Minute)
		for {
			st, err := store.Load(context.Background(), "zigbee")
			if err != nil {
				b.Fatal(err)
			}
			if st.View(breaker.Instant{Wall: time.Now()}).Phase == want {
				return
			}
			if time.Now().After(deadline) {
				b.Fatalf("circuit not %s a minute after the message: the daemon did not judge it", want)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	until(breaker.Closed)
	env := []string{"FUSEBOX_CONFIG=" + cfg}
	var opened, skipped []time.Duration
	for b.Loop() {
		start := time.Now()
		pub.retain(b, bridgeTopic, `{"state":"offline"}`)
		until(breaker.Open)
		opened = append(opened, time.Since(start))
		cmd := fbCmd(state, env, "run", "zigbee", "--", "true")
		out, err := cmd.CombinedOutput()
		skipped = append(skipped, time.Since(start))
		if code := cmd.ProcessState.ExitCode(); code != exitOpen {
			b.Fatalf("run after the offline: exit %d (%v), want %d\n%s", code, err, exitOpen, out)
		}
		b.StopTimer()
		pub.retain(b, bridgeTopic, `{"state":"online"}`)
		until(breaker.Closed)
		b.StartTimer()
	}
	b.ReportMetric(median(opened).Seconds()*1000, "open_ms")
	b.ReportMetric(median(skipped).Seconds()*1000, "skip_ms")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
