package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/fakeapis"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// weatherExample serves the stand-in APIs until the test ends and writes
// examples/weather.yaml, pointed at them, beside the token it reads: the
// worked example of docs/call.md, with a state dir and the environment it sets.
func weatherExample(t *testing.T) (apis *fakeapis.Server, state string, env []string) {
	t.Helper()
	apis = fakeapis.New("demo-key", "demo-token")
	srv := httptest.NewServer(apis)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	cfgText, err := os.ReadFile("../../examples/weather.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "weather.yaml")
	os.WriteFile(cfg, []byte(strings.ReplaceAll(string(cfgText), "127.0.0.1:8089", srv.Listener.Addr().String())), 0o600)
	token, _ := os.ReadFile("../../examples/ha_token")
	os.WriteFile(filepath.Join(dir, "ha_token"), token, 0o600)
	return apis, filepath.Join(dir, "state"), []string{"OWM_API_KEY=demo-key", "FUSEBOX_CONFIG=" + cfg}
}

// TestDocsWeatherExample runs the worked example of docs/call.md against the
// stand-in APIs, with the config from examples/ as documented.
func TestDocsWeatherExample(t *testing.T) {
	t.Parallel() // waits on processes and timers: it runs beside the others
	apis, state, env := weatherExample(t)
	call := func(args ...string) testenv.Proc {
		t.Helper()
		return fbEnv(t, state, env, append([]string{"call", "-v"}, args...)...)
	}
	envelope := func(p testenv.Proc) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(p.Stdout), &m); err != nil {
			t.Fatalf("envelope %q: %v", p.Stdout, err)
		}
		return m
	}
	var logs strings.Builder

	p := call("weather")
	logs.WriteString(p.Stderr)
	if p.Code != 0 || p.Stdout != "21.5\n" {
		t.Fatalf("call weather: exit %d, %q\n%s", p.Code, p.Stdout, p.Stderr)
	}
	p = call("--json", "weather")
	if m := envelope(p); m["source"] != "fresh" || apis.Hits(fakeapis.OpenWeatherMap) != 1 {
		t.Errorf("second call within 10m: %v, %d upstream calls; want fresh and 1", m, apis.Hits(fakeapis.OpenWeatherMap))
	}

	apis.Down(fakeapis.OpenWeatherMap)
	p = call("--no-fresh", "weather")
	logs.WriteString(p.Stderr)
	if p.Code != 0 || p.Stdout != "21\n" || !strings.Contains(p.Stderr, "endpoint=wttr") {
		t.Fatalf("with OpenWeatherMap down: exit %d, %q; want wttr.in's 21\n%s", p.Code, p.Stdout, p.Stderr)
	}

	apis.Down(fakeapis.Wttr)
	apis.Down(fakeapis.OpenMeteo)
	p = call("--no-fresh", "--json", "weather")
	logs.WriteString(p.Stderr)
	if m := envelope(p); p.Code != 0 || m["source"] != "stale" || m["body"] != 21.0 || len(m["errors"].([]any)) != 3 {
		t.Fatalf("every source down: exit %d, %v; want the stale 21 and three errors", p.Code, m)
	}
	p = call("--no-fresh", "--no-stale", "weather")
	if p.Code != exitUnavailable && p.Code != exitOpen {
		t.Errorf("--no-stale with every source down: exit %d, want 69 or 75", p.Code)
	}

	p = call("home-assistant")
	logs.WriteString(p.Stderr)
	if p.Code != 0 || p.Stdout != "21.2\n" {
		t.Fatalf("call home-assistant: exit %d, %q\n%s", p.Code, p.Stdout, p.Stderr)
	}
	st := fbEnv(t, state, env, "status")
	logs.WriteString(st.Stdout + st.Stderr)
	if !strings.Contains(st.Stdout, "weather") || !strings.Contains(st.Stdout, "last answer from") {
		t.Errorf("status does not show the chain:\n%s", st.Stdout)
	}
	for _, secret := range []string{"demo-key", "demo-token"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("secret %q leaked into the output:\n%s", secret, logs.String())
		}
	}
}

// TestDocsHedgeExample runs the hedged chain of docs/call.md, weather-now, with
// OpenWeatherMap holding its answer for longer than the call lasts.
func TestDocsHedgeExample(t *testing.T) {
	apis, state, env := weatherExample(t)
	for _, name := range []string{"openweather", "wttr"} {
		if p := fbEnv(t, state, env, "reset", name); p.Code != 0 {
			t.Fatalf("reset %s: exit %d\n%s", name, p.Code, p.Stderr)
		}
	}
	apis.Slow(fakeapis.OpenWeatherMap, time.Hour) // answers only a hedge

	p := fbEnv(t, state, env, "-v", "call", "--json", "weather-now")
	var m struct {
		Source string
		Errors []map[string]any
	}
	if err := json.Unmarshal([]byte(p.Stdout), &m); err != nil || p.Code != 0 {
		t.Fatalf("call weather-now: exit %d, %q (%v)\n%s", p.Code, p.Stdout, err, p.Stderr)
	}
	if m.Source != "wttr" || len(m.Errors) != 1 || m.Errors[0]["name"] != "openweather" || m.Errors[0]["cancelled"] != true {
		t.Errorf("call weather-now: %s; want wttr's answer and openweather cancelled", p.Stdout)
	}
	for _, want := range []string{`msg="hedge started" chain=weather-now endpoint=wttr beside=openweather after=300ms`,
		`msg="hedge cancelled" chain=weather-now endpoint=openweather answered=wttr`} {
		if !strings.Contains(p.Stderr, want) {
			t.Errorf("-v does not log %s:\n%s", want, p.Stderr)
		}
	}
	st := fbEnv(t, state, env, "status", "--json", "openweather")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(st.Stdout), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("status --json openweather: %q (%v)", st.Stdout, err)
	}
	if rows[0]["state"] != "closed" || rows[0]["consecutive_failures"] != 0.0 {
		t.Errorf("openweather after its hedge was cancelled: %v; want closed with no failure", rows[0])
	}
}
