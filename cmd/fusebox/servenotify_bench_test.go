package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// BenchmarkServeCallThatOpensACircuit measures a daemon's call whose one
// failing attempt opens the circuit (so a notification is due), as its
// caller sees it: with no notification configured, with a webhook that
// answers, and with a webhook that never answers plus a broker that
// accepts connections and never speaks, under notify timeout 10m. The
// three daemons are called in turn, round by round; between rounds the
// circuits are reset, untimed. The caller must not wait for either: the
// hanging/none ratio stays near 1.
//
//	go test -run '^$' -bench ServeCallThatOpensACircuit -benchtime 50x ./cmd/fusebox/
func BenchmarkServeCallThatOpensACircuit(b *testing.B) {
	ok := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer ok.Close()
	hang := newHangingHook(b)
	silent := silentBroker(b)
	up := newFlaky(b)
	up.down.Store(true)

	contenders := []struct{ name, notify string }{
		{"none", ""},
		{"webhook", fmt.Sprintf("    notify: {after: 0s, webhooks: [{url: '%s'}]}\n", ok.URL)},
		{"hanging", fmt.Sprintf("    notify: {after: 0s, timeout: 10m, webhooks: [{url: '%s'}], mqtt: {broker: 'tcp://%s'}}\n", hang.URL, silent)},
	}
	daemons := make([]*testenv.Daemon, len(contenders))
	for k, c := range contenders {
		dir := b.TempDir()
		cfg := writeConfigPath(b, dir, fmt.Sprintf("circuits:\n  bridge:\n    attempts: 1\n    trip_after: 1\n    open_for: 1h\n    http: {url: '%s/api'}\n%s", up.URL, c.notify))
		daemons[k] = startServe(b, filepath.Join(dir, "state"), cfg)
	}
	client := &http.Client{Timeout: time.Minute}
	times := make([][]time.Duration, len(contenders))
	for b.Loop() {
		for k, d := range daemons {
			start := time.Now()
			resp, err := client.Get("http://" + d.Addr + "/call/bridge")
			if err != nil {
				b.Fatalf("%s: the call that opens the circuit: %v", contenders[k].name, err)
			}
			resp.Body.Close()
			times[k] = append(times[k], time.Since(start))
			if resp.StatusCode != http.StatusServiceUnavailable {
				b.Fatalf("%s: answered %d", contenders[k].name, resp.StatusCode)
			}
		}
		b.StopTimer()
		for _, d := range daemons {
			resp, err := client.Post("http://"+d.Addr+"/api/circuits/bridge/reset", "", nil)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
		}
		b.StartTimer()
	}
	b.StopTimer()
	med := make([]float64, len(contenders))
	for k, c := range contenders {
		slices.Sort(times[k])
		med[k] = float64(times[k][len(times[k])/2].Microseconds()) / 1000
		b.ReportMetric(med[k], c.name+"-median-ms")
		b.ReportMetric(float64(times[k][len(times[k])-1].Microseconds())/1000, c.name+"-worst-ms")
	}
	b.ReportMetric(med[2]/med[0], "hanging/none")
	b.ReportMetric(0, "ns/op")
	hang.free()
	for _, d := range daemons {
		d.Signal(b, syscall.SIGTERM)
		d.Wait(b)
	}
}
