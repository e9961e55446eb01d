package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// tokenRequest makes a request to the daemon with the token, and returns
// its status and body.
func tokenRequest(t *testing.T, addr, method, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, path, err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The three attacks of issue 36 item 1 at once on one daemon: 20 status
// pages and a scrape over 20 full event logs, six POSTs whose upstream
// answers 10 MB of JSON for an extract:, and a broker that sends a 200 MB
// packet. A caller with the token is answered meanwhile, and the daemon's
// peak resident set stays within 128 MiB.
func TestEverythingAPeerSendsTheDaemonFitsOneBudget(t *testing.T) {
	t.Parallel() // waits on processes and timers: it runs beside the others
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	fullEventLogs(t, state, 20, 4<<20)
	big := weatherList(10_000_000)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			fmt.Fprint(w, `{"ok":true}`)
			return
		}
		w.Write(big)
	}))
	t.Cleanup(up.Close)
	broker, conns := oversizedBroker(t)
	const token = "a-token-of-the-caller"
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startServe(t, state, writeConfigPath(t, dir, fmt.Sprintf(`mqtt: {broker: 'tcp://%s'}
circuits:
  big:
    attempts: 1
    trip_after: 100
    http: {url: '%s/big', method: POST, extract: '.list | length'}
  ok:
    http: {url: '%s/ok', extract: '.ok'}
  zigbee:
    health:
      mqtt: {topic: %s, up: '.state == "online"'}
`, broker, up.URL, up.URL, bridgeTopic)), "--token-file", tokenFile)

	var wg sync.WaitGroup
	for i := range 27 {
		wg.Go(func() {
			switch {
			case i < 20:
				tokenRequest(t, d.Addr, "GET", "/api/outages", token)
			case i == 20:
				tokenRequest(t, d.Addr, "GET", "/metrics", token)
			default:
				tokenRequest(t, d.Addr, "POST", "/call/big", token)
			}
		})
	}
	<-conns // the broker's 200 MB packet is on its way
	code, body := tokenRequest(t, d.Addr, "GET", "/call/ok", token)
	if code != 200 || body != "true" {
		t.Errorf("the caller with the token: %d %q, want 200 true", code, body)
	}
	wg.Wait()
	<-conns // and the daemon connected again after it
	peak := peakRSS(t, d.Cmd.Process.Pid)
	t.Logf("all three at once: the daemon's peak RSS %.1f MiB", float64(peak)/(1<<20))
	if bound := int64(128<<20) * testenv.RaceMemory; peak > bound { // a race-built daemon holds more
		t.Errorf("the daemon's peak RSS is %d MiB, want at most %d", peak>>20, bound>>20)
	}
}
