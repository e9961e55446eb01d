package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// BenchmarkRunThatOpensACircuit measures a whole `fusebox run` process whose
// one failing attempt opens the circuit (so a notification is due), with no
// notification configured, with a webhook that answers, and with a webhook
// that never answers plus a broker that accepts connections and never
// speaks, under notify timeout 1s: the last must stay within the bound (its
// output is written before either is tried).
//
//	go test -run '^$' -bench RunThatOpensACircuit -benchtime 5x ./cmd/fusebox/
func BenchmarkRunThatOpensACircuit(b *testing.B) {
	ok := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer ok.Close()
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release)
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()

	configs := []struct{ name, notify string }{
		{"none", ""},
		{"webhook", fmt.Sprintf("  notify: {timeout: 1s, webhooks: [{url: '%s'}]}\n", ok.URL)},
		{"down-broker", fmt.Sprintf("  notify: {timeout: 1s, mqtt: {broker: 'tcp://127.0.0.1:%d'}}\n", testenv.FreePort(b))},
		{"hanging", fmt.Sprintf("  notify: {timeout: 1s, webhooks: [{url: '%s'}], mqtt: {broker: 'tcp://%s'}}\n", hang.URL, silent.Addr())},
	}
	for _, c := range configs {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			cfg := filepath.Join(dir, "config.yaml")
			os.WriteFile(cfg, []byte("defaults:\n  attempts: 1\n  trip_after: 1\n"+c.notify), 0o600)
			var worst time.Duration
			for i := 0; b.Loop(); i++ {
				cmd := fbCmd(filepath.Join(dir, "state"), []string{"FUSEBOX_CONFIG=" + cfg}, "run", fmt.Sprintf("c%d", i), "--", "false")
				start := time.Now()
				cmd.Run()
				worst = max(worst, time.Since(start))
			}
			b.ReportMetric(float64(worst.Milliseconds()), "worst-ms")
		})
	}
}
