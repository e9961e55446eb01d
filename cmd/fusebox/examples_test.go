package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/fakeapis"
)

// TestREADMEWeatherExample runs the README's worked example against the
// stand-in APIs, with the config from examples/ as documented.
func TestREADMEWeatherExample(t *testing.T) {
	apis := fakeapis.New("demo-key", "demo-token")
	srv := httptest.NewServer(apis)
	defer srv.Close()
	dir := t.TempDir()
	cfgText, err := os.ReadFile("../../examples/weather.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "weather.yaml")
	os.WriteFile(cfg, []byte(strings.ReplaceAll(string(cfgText), "127.0.0.1:8089", srv.Listener.Addr().String())), 0o600)
	token, _ := os.ReadFile("../../examples/ha_token")
	os.WriteFile(filepath.Join(dir, "ha_token"), token, 0o600)
	state := filepath.Join(dir, "state")
	env := []string{"OWM_API_KEY=demo-key", "FUSEBOX_CONFIG=" + cfg}
	call := func(args ...string) proc {
		t.Helper()
		return fbEnv(t, state, env, append([]string{"call", "-v"}, args...)...)
	}
	envelope := func(p proc) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(p.stdout), &m); err != nil {
			t.Fatalf("envelope %q: %v", p.stdout, err)
		}
		return m
	}
	var logs strings.Builder

	p := call("weather")
	logs.WriteString(p.stderr)
	if p.code != 0 || p.stdout != "21.5\n" {
		t.Fatalf("call weather: exit %d, %q\n%s", p.code, p.stdout, p.stderr)
	}
	p = call("--json", "weather")
	if m := envelope(p); m["source"] != "fresh" || apis.Hits(fakeapis.OpenWeatherMap) != 1 {
		t.Errorf("second call within 10m: %v, %d upstream calls; want fresh and 1", m, apis.Hits(fakeapis.OpenWeatherMap))
	}

	apis.Down(fakeapis.OpenWeatherMap)
	p = call("--no-fresh", "weather")
	logs.WriteString(p.stderr)
	if p.code != 0 || p.stdout != "21\n" || !strings.Contains(p.stderr, "endpoint=wttr") {
		t.Fatalf("with OpenWeatherMap down: exit %d, %q; want wttr.in's 21\n%s", p.code, p.stdout, p.stderr)
	}

	apis.Down(fakeapis.Wttr)
	apis.Down(fakeapis.OpenMeteo)
	p = call("--no-fresh", "--json", "weather")
	logs.WriteString(p.stderr)
	if m := envelope(p); p.code != 0 || m["source"] != "stale" || m["body"] != 21.0 || len(m["errors"].([]any)) != 3 {
		t.Fatalf("every source down: exit %d, %v; want the stale 21 and three errors", p.code, m)
	}
	p = call("--no-fresh", "--no-stale", "weather")
	if p.code != exitUnavailable && p.code != exitOpen {
		t.Errorf("--no-stale with every source down: exit %d, want 69 or 75", p.code)
	}

	p = call("home-assistant")
	logs.WriteString(p.stderr)
	if p.code != 0 || p.stdout != "21.2\n" {
		t.Fatalf("call home-assistant: exit %d, %q\n%s", p.code, p.stdout, p.stderr)
	}
	st := fbEnv(t, state, env, "status")
	logs.WriteString(st.stdout + st.stderr)
	if !strings.Contains(st.stdout, "weather") || !strings.Contains(st.stdout, "last answer from") {
		t.Errorf("status does not show the chain:\n%s", st.stdout)
	}
	for _, secret := range []string{"demo-key", "demo-token"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("secret %q leaked into the output:\n%s", secret, logs.String())
		}
	}
}
