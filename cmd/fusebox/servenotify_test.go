package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// The daemon notifies about the transitions it makes, as the CLI does: a
// call that opens a circuit sends opened (webhook, MQTT), the health check
// that closes it sends closed; it holds one MQTT connection, online while
// it runs and offline once it stops.
func TestServeNotifiesTheTransitionsItMakes(t *testing.T) {
	broker := testenv.Mosquitto(t)
	hooks := newHookServer(t)
	up := newFlaky(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cfg := writeConfigPath(t, dir, fmt.Sprintf(`defaults:
  notify:
    after: 0s
    webhooks: [{url: '%s/hook'}]
    mqtt: {broker: 'tcp://%s', instance: test}
circuits:
  bridge:
    attempts: 1
    trip_after: 1
    open_for: 1h
    http:
      url: %s/api
      health: {interval: 50ms}
`, hooks.URL, broker, up.URL))
	sub := testenv.Subscribe(t, broker, "#")
	d := startServe(t, state, cfg)
	sub.Wait(t, "fusebox/serve/test/availability", "online")
	sub.Wait(t, "homeassistant/binary_sensor/fusebox_test/serve/config", "")

	up.down.Store(true)
	if code, _, _ := d.Get(t, "/call/bridge"); code != http.StatusServiceUnavailable {
		t.Fatalf("a call of a down upstream answered %d", code)
	}
	sub.Wait(t, "fusebox/bridge/state", "ON")
	testenv.WaitFor(t, "the daemon's opened message", func() bool { return len(hooks.events(t)) == 1 })
	up.down.Store(false) // the health check closes it
	sub.Wait(t, "fusebox/bridge/state", "OFF")
	testenv.WaitFor(t, "the health check's closed message", func() bool { return len(hooks.events(t)) == 2 })
	if got := hooks.events(t); got[0] != "bridge opened" || got[1] != "bridge closed" {
		t.Errorf("messages = %q, want bridge opened, bridge closed", got)
	}

	d.Signal(t, syscall.SIGTERM)
	if code := d.Wait(t); code != 0 {
		t.Fatalf("serve exited %d: %s", code, d.Stderr)
	}
	sub.Wait(t, "fusebox/serve/test/availability", "offline")
	if got := testenv.Retained(t, broker, "fusebox/serve/test/availability"); got != "offline" {
		t.Errorf("the daemon's availability after it stopped = %q, want offline retained", got)
	}
	if s := d.Stderr.String(); strings.Contains(s, "notify failed") || strings.Contains(s, "mqtt:") {
		t.Errorf("stderr:\n%s", s)
	}
}

// An outage the CLI announced is closed through the daemon's API: the
// daemon sends the closed message, and nobody sends a second opened.
func TestServeResetClosesAnOutageTheCLIAnnounced(t *testing.T) {
	hooks := newHookServer(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cfg := writeConfigPath(t, dir, fmt.Sprintf(`defaults:
  notify:
    after: 0s
    webhooks: [{url: '%s/hook'}]
circuits:
  bridge: {attempts: 1, trip_after: 1, open_for: 1h}
`, hooks.URL))
	if p := fbEnv(t, state, []string{"FUSEBOX_CONFIG=" + cfg}, "run", "bridge", "--", "false"); p.Code != 1 {
		t.Fatalf("run: exit %d: %s", p.Code, p.Stderr)
	}
	if got := hooks.events(t); len(got) != 1 || got[0] != "bridge opened" {
		t.Fatalf("the CLI sent %q, want bridge opened", got)
	}
	d := startServe(t, state, cfg)
	if code, _, body := d.Post(t, "/api/circuits/bridge/reset"); code != 200 {
		t.Fatalf("reset answered %d %s", code, body)
	}
	testenv.WaitFor(t, "the daemon's closed message", func() bool { return len(hooks.events(t)) == 2 })
	d.Signal(t, syscall.SIGTERM)
	d.Wait(t)
	if got := hooks.events(t); len(got) != 2 || got[1] != "bridge closed" {
		t.Errorf("messages = %q, want the CLI's opened, then the daemon's closed", got)
	}
}

// hangingHook is a webhook that takes each request and answers only when
// released (or the request's client gives up); arrived has the first
// bodies.
type hangingHook struct {
	*httptest.Server
	arrived chan string
	release chan struct{}
	once    sync.Once
}

func newHangingHook(t testing.TB) *hangingHook {
	h := &hangingHook{arrived: make(chan string, 10), release: make(chan struct{})}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case h.arrived <- string(b):
		default: // nobody is counting this many
		}
		select {
		case <-h.release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { h.free(); h.Close() })
	return h
}

func (h *hangingHook) free() { h.once.Do(func() { close(h.release) }) }

// serveWithAHangingWebhook starts a daemon whose endpoint bridge is down
// and opens at its first failure, notifying a webhook that hangs, under
// the notify timeout given.
func serveWithAHangingWebhook(t *testing.T, timeout string) (*testenv.Daemon, *hangingHook) {
	hook := newHangingHook(t)
	up := newFlaky(t)
	up.down.Store(true)
	dir := t.TempDir()
	cfg := writeConfigPath(t, dir, fmt.Sprintf(`defaults:
  notify:
    after: 0s
    timeout: %s
    webhooks: [{url: '%s/hook'}]
circuits:
  bridge:
    attempts: 1
    trip_after: 1
    http: {url: '%s/api'}
`, timeout, hook.URL, up.URL))
	return startServe(t, filepath.Join(dir, "state"), cfg), hook
}

// A call that opens a circuit answers while its webhook hangs, and on
// SIGTERM the daemon delivers what it queued before it exits.
func TestServeCallsNeverWaitForANotificationWhichSIGTERMFlushes(t *testing.T) {
	d, hook := serveWithAHangingWebhook(t, "10m")
	start := time.Now()
	// With a 10m notify timeout, a call that waited for its webhook would
	// not answer within the minute.
	resp, err := (&http.Client{Timeout: time.Minute}).Get("http://" + d.Addr + "/call/bridge")
	if err != nil {
		t.Fatalf("the call that opens the circuit: %v (did it wait for the webhook?)", err)
	}
	resp.Body.Close()
	took := time.Since(start)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("the call answered %d", resp.StatusCode)
	}
	t.Logf("a call that opens the circuit, its webhook hanging: %s", took)
	if body := <-hook.arrived; !strings.Contains(body, `"event":"opened"`) {
		t.Fatalf("the webhook got %s", body)
	}

	d.Signal(t, syscall.SIGTERM)
	testenv.WaitFor(t, "the daemon to stop listening", func() bool {
		c, err := net.Dial("tcp", d.Addr)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	if gone, code := d.Exited(); gone {
		t.Fatalf("the daemon exited (%d) before its queued notification was delivered: %s", code, d.Stderr)
	}
	hook.free()
	if code := d.Wait(t); code != 0 {
		t.Fatalf("serve exited %d: %s", code, d.Stderr)
	}
	if s := d.Stderr.String(); strings.Contains(s, "notify failed") || strings.Contains(s, "not sent") {
		t.Errorf("the notification was not delivered:\n%s", s)
	}
}

// A webhook that never answers holds the daemon's exit at most its
// timeout: the notification is given up, and said so.
func TestServeSIGTERMGivesUpANotificationAtItsTimeout(t *testing.T) {
	const timeout = time.Second
	d, hook := serveWithAHangingWebhook(t, timeout.String())
	d.Get(t, "/call/bridge")
	<-hook.arrived
	start := time.Now()
	d.Signal(t, syscall.SIGTERM)
	if code := d.Wait(t); code != 0 {
		t.Fatalf("serve exited %d: %s", code, d.Stderr)
	}
	took := time.Since(start)
	if took > timeout+notifySlack+3*time.Second {
		t.Errorf("SIGTERM took %s with a hanging webhook, bound %s", took, timeout+notifySlack)
	}
	if !strings.Contains(d.Stderr.String(), "notify failed") {
		t.Errorf("the given-up notification is not logged:\n%s", d.Stderr)
	}
	t.Logf("SIGTERM with a webhook that never answers (timeout %s): %s", timeout, took)
}

// SIGHUP picks up a changed notify config: another webhook, and a broker
// the daemon connects to.
func TestServeReloadPicksUpTheNotifyConfig(t *testing.T) {
	broker := testenv.Mosquitto(t)
	before, after := newHookServer(t), newHookServer(t)
	up := newFlaky(t)
	up.down.Store(true)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	body := `circuits:
  bridge:
    attempts: 1
    trip_after: 1
    open_for: 1h
    http: {url: '%s/api'}
    notify:
      after: 0s
      webhooks: [{url: '%s/hook'}]
`
	cfg := writeConfigPath(t, dir, fmt.Sprintf(body, up.URL, before.URL))
	d := startServe(t, state, cfg)
	sub := testenv.Subscribe(t, broker, "fusebox/#")
	writeConfigPath(t, dir, fmt.Sprintf(body+"      mqtt: {broker: 'tcp://%s', instance: test}\n", up.URL, after.URL, broker))
	d.Signal(t, syscall.SIGHUP)
	sub.Wait(t, "fusebox/serve/test/availability", "online")
	d.Get(t, "/call/bridge")
	sub.Wait(t, "fusebox/bridge/state", "ON")
	testenv.WaitFor(t, "the new webhook's opened message", func() bool { return len(after.events(t)) == 1 })
	if got := before.events(t); len(got) != 0 {
		t.Errorf("the webhook the config no longer names got %q", got)
	}
	d.Signal(t, syscall.SIGTERM)
	d.Wait(t)
}

// The daemon pings a circuit's heartbeats after the calls it makes: a
// success, a failure at once (the outcome changed), and nothing for a call
// skipped on the open circuit.
func TestServePingsHeartbeats(t *testing.T) {
	hooks := newHookServer(t)
	up := newFlaky(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cfg := writeConfigPath(t, dir, fmt.Sprintf(`circuits:
  bridge:
    attempts: 1
    trip_after: 1
    open_for: 1h
    http: {url: '%s/api'}
    notify:
      heartbeats: [{url: '%s/hc/uuid'}]
`, up.URL, hooks.URL))
	d := startServe(t, state, cfg)
	pings := func() string {
		hooks.mu.Lock()
		defer hooks.mu.Unlock()
		return strings.Join(hooks.paths, ", ")
	}
	d.Get(t, "/call/bridge")
	testenv.WaitFor(t, "the ping of a success", func() bool { return pings() == "GET /hc/uuid" })
	up.down.Store(true)
	d.Get(t, "/call/bridge") // opens the circuit
	testenv.WaitFor(t, "the ping of a failure", func() bool { return pings() == "GET /hc/uuid, POST /hc/uuid/fail" })
	if code, _, _ := d.Get(t, "/call/bridge"); code != http.StatusServiceUnavailable {
		t.Fatalf("a call on the open circuit answered %d", code)
	}
	d.Signal(t, syscall.SIGTERM)
	d.Wait(t)
	if got := pings(); got != "GET /hc/uuid, POST /hc/uuid/fail" {
		t.Errorf("pings = %s, want the success and the failure, none for the skip", got)
	}
}
