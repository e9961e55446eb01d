package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// hookServer keeps the requests a local webhook receives.
type hookServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
	paths  []string
}

func newHookServer(t *testing.T) *hookServer {
	h := &hookServer{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.bodies = append(h.bodies, string(b))
		h.paths = append(h.paths, r.Method+" "+r.URL.Path)
		h.mu.Unlock()
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookServer) events(t *testing.T) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var got []string
	for _, b := range h.bodies {
		var m struct {
			Circuit, Event string
		}
		if json.Unmarshal([]byte(b), &m) == nil && m.Event != "" {
			got = append(got, m.Circuit+" "+m.Event)
		}
	}
	return got
}

func writeConfig(t *testing.T, dir, text string) []string {
	t.Helper()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"FUSEBOX_CONFIG=" + cfg}
}

// Four processes fail on one circuit at once; the one whose failure opened
// it sends the one message, and the reset that closes it sends one more.
func TestTwoProcessesSeeingOneTransitionSendOneMessage(t *testing.T) {
	hooks := newHookServer(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	env := writeConfig(t, dir, fmt.Sprintf(`defaults:
  notify:
    webhooks: [{url: '%s/hook'}]
circuits:
  bridge: {attempts: 1, trip_after: 1, open_for: 1h}
`, hooks.URL))
	gate := filepath.Join(dir, "go")
	var wg sync.WaitGroup
	for range 4 {
		// Each waits for the gate, so that all four are running before any
		// fails.
		wg.Go(func() {
			fbEnv(t, state, env, "run", "bridge", "--", "sh", "-c", `while [ ! -e "$0" ]; do sleep 0.01; done; exit 1`, gate)
		})
	}
	testenv.WaitFor(t, "four runs to start", func() bool { return countChildren(t, gate) >= 4 })
	os.WriteFile(gate, nil, 0o600)
	wg.Wait()
	if got := hooks.events(t); len(got) != 1 || got[0] != "bridge opened" {
		t.Fatalf("messages = %q, want one bridge opened", got)
	}
	if p := fbEnv(t, state, env, "reset", "bridge"); p.Code != 0 {
		t.Fatal(p.Stderr)
	}
	if got := hooks.events(t); len(got) != 2 || got[1] != "bridge closed" {
		t.Errorf("messages after the reset = %q, want opened, then closed", got)
	}
}

// countChildren counts the shell children waiting for gate.
func countChildren(t *testing.T, gate string) int {
	n := 0
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), gate) && strings.HasPrefix(string(b), "sh\x00") {
			n++
		}
	}
	return n
}

// A webhook that never answers and a broker that accepts and never speaks
// hold the process at most the notify timeout after the call's output.
func TestAHangingNotifierDoesNotHoldTheCallPastTheBound(t *testing.T) {
	hang := newHangingHook(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	const timeout = time.Second
	env := writeConfig(t, dir, fmt.Sprintf(`defaults:
  notify:
    timeout: 1s
    webhooks: [{url: '%s/hook'}]
    mqtt: {broker: 'tcp://127.0.0.1:%d'}
circuits:
  bridge: {attempts: 1, trip_after: 1}
`, hang.URL, testenv.FreePort(t)))
	run := []string{"run", "bridge", "--", "sh", "-c", "echo answer; exit 1"}
	// The same run with nothing to notify, just before and just after:
	// what a process costs this machine now, so that the bound scales
	// with a busy machine.
	bare := writeConfig(t, t.TempDir(), "circuits:\n  bridge: {attempts: 1, trip_after: 1}\n")
	before := fbEnv(t, filepath.Join(dir, "base"), bare, run...)
	p := fbEnv(t, state, env, run...)
	after := fbEnv(t, filepath.Join(dir, "base"), bare, run...)
	if p.Code != 1 || p.Stdout != "answer\n" {
		t.Fatalf("run: exit %d, stdout %q, want 1 and the answer", p.Code, p.Stdout)
	}
	base := max(before.Took, after.Took)
	// A run that waited on the webhook past its timeout takes another
	// timeout at least (the default is 5s); a slow machine takes a few times
	// the baseline.
	if bound := timeout + notifySlack + 4*base + time.Second/2; p.Took > bound {
		t.Errorf("run took %s with a hanging webhook, past the notify timeout %s + %s slack + 4x the %s the same run took without notifiers (the slower of one before and one after) + 0.5s (%s): "+
			"it waited on the webhook longer than its timeout (behaviour, not a slow machine)", p.Took, timeout, notifySlack, base, bound)
	}
	if !strings.Contains(p.Stderr, "notify failed") || !strings.Contains(p.Stderr, "mqtt 127.0.0.1") {
		t.Errorf("stderr does not log the failures to notify:\n%s", p.Stderr)
	}
	t.Logf("run with a hanging webhook and a down broker took %s (notify timeout %s; %s without notifiers)", p.Took, timeout, base)
}

func TestRunPingsItsHeartbeats(t *testing.T) {
	hooks := newHookServer(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	env := writeConfig(t, dir, fmt.Sprintf(`circuits:
  backup:
    attempts: 1
    notify:
      heartbeats:
        - url: '%[1]s/hc/uuid'
        - {url: '%[1]s/api/push/kuma', kind: uptime_kuma}
`, hooks.URL))
	fbEnv(t, state, env, "run", "backup", "--", "true")
	fbEnv(t, state, env, "run", "backup", "--", "false")
	fbEnv(t, state, env, "run", "other", "--", "true") // no heartbeat of its own
	hooks.mu.Lock()
	defer hooks.mu.Unlock()
	got := strings.Join(hooks.paths, ", ")
	for _, want := range []string{"GET /hc/uuid", "POST /hc/uuid/fail", "GET /api/push/kuma"} {
		if !strings.Contains(got, want) {
			t.Errorf("pings %s lack %s", got, want)
		}
	}
	if len(hooks.paths) != 4 {
		t.Errorf("pings = %s, want 4", got)
	}
}
