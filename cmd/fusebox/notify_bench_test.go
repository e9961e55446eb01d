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
	hang := newHangingHook(b)
	silent := silentBroker(b)

	configs := []struct{ name, notify string }{
		{"none", ""},
		{"webhook", fmt.Sprintf("  notify: {timeout: 1s, webhooks: [{url: '%s'}]}\n", ok.URL)},
		{"down-broker", fmt.Sprintf("  notify: {timeout: 1s, mqtt: {broker: 'tcp://127.0.0.1:%d'}}\n", testenv.FreePort(b))},
		{"hanging", fmt.Sprintf("  notify: {timeout: 1s, webhooks: [{url: '%s'}], mqtt: {broker: 'tcp://%s'}}\n", hang.URL, silent)},
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

// silentBroker listens on 127.0.0.1, accepts connections and never says a
// word: a broker that hangs. It returns its address.
func silentBroker(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}
