package packaging_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/internal/fakeapis"
	"github.com/fusebox-hq/fusebox/serve"
)

// callerWait is one recipe's caller: how long it waits for the daemon.
type callerWait struct {
	recipe string
	name   string // the name it calls; "": any
	wait   time.Duration
}

// calledName returns the name a URL of the daemon's calls, or "".
func calledName(url string) string {
	if m := regexp.MustCompile(`/call/([^/?]+)`).FindStringSubmatch(url); m != nil {
		return m[1]
	}
	return ""
}

// recipeWaits reads how long each documented caller of the daemon waits,
// from the recipes themselves: Home Assistant's rest sensors, the n8n
// workflow's HTTP Request nodes, the Node-RED http request node's flow, the
// Node-RED node's example flow and its default.
func recipeWaits(t *testing.T) []callerWait {
	t.Helper()
	var waits []callerWait
	read := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	var ha struct {
		Sensor []struct {
			Platform string
			Name     string
			Resource string
			Timeout  float64
		}
	}
	if err := yaml.Unmarshal(read("examples/home-assistant.yaml"), &ha); err != nil {
		t.Fatalf("examples/home-assistant.yaml: %v", err)
	}
	for _, s := range ha.Sensor {
		if s.Platform == "rest" && calledName(s.Resource) != "" {
			w := 10 * time.Second // Home Assistant's rest default
			if s.Timeout > 0 {
				w = time.Duration(s.Timeout * float64(time.Second))
			}
			waits = append(waits, callerWait{"home-assistant.yaml: " + s.Name, calledName(s.Resource), w})
		}
	}

	var n8n struct {
		Nodes []struct {
			Name       string
			Type       string
			Parameters struct {
				URL     string
				Options struct{ Timeout float64 }
			}
		}
	}
	if err := json.Unmarshal(read("examples/n8n-workflow.json"), &n8n); err != nil {
		t.Fatalf("examples/n8n-workflow.json: %v", err)
	}
	for _, n := range n8n.Nodes {
		if n.Type == "n8n-nodes-base.httpRequest" && calledName(n.Parameters.URL) != "" {
			if n.Parameters.Options.Timeout <= 0 {
				t.Errorf("n8n-workflow.json: %s sets no timeout: n8n's default is 5 minutes", n.Name)
				continue
			}
			waits = append(waits, callerWait{"n8n-workflow.json: " + n.Name, calledName(n.Parameters.URL), time.Duration(n.Parameters.Options.Timeout) * time.Millisecond})
		}
	}

	var flow []struct {
		Type    string
		Name    string
		Target  string
		Timeout json.Number
	}
	if err := json.Unmarshal(read("node-red-fusebox/examples/weather.json"), &flow); err != nil {
		t.Fatalf("node-red-fusebox/examples/weather.json: %v", err)
	}
	for _, n := range flow {
		if n.Type == "fusebox call" {
			s, err := n.Timeout.Float64()
			if err != nil {
				t.Fatalf("weather.json: %s: timeout %q", n.Name, n.Timeout)
			}
			waits = append(waits, callerWait{"node-red-fusebox/examples/weather.json: " + n.Name, n.Target, time.Duration(s * float64(time.Second))})
		}
	}
	// The http request node's flow: its wait is the msg.requestTimeout
	// (ms) the inject node wired to it sets; without one, Node-RED's
	// default of 120 s (settings.js httpRequestTimeout).
	var httpFlow []struct {
		ID, Type, Name, URL string
		Props               []struct{ P, V string }
		Wires               [][]string
	}
	if err := json.Unmarshal(read("examples/node-red-flow.json"), &httpFlow); err != nil {
		t.Fatalf("examples/node-red-flow.json: %v", err)
	}
	sent := map[string]time.Duration{} // msg.requestTimeout, by the node it reaches
	for _, n := range httpFlow {
		for _, p := range n.Props {
			if ms, err := strconv.Atoi(p.V); p.P == "requestTimeout" && err == nil {
				for _, to := range slices.Concat(n.Wires...) {
					sent[to] = time.Duration(ms) * time.Millisecond
				}
			}
		}
	}
	for _, n := range httpFlow {
		if n.Type == "http request" && calledName(n.URL) != "" {
			w, ok := sent[n.ID]
			if !ok {
				w = 120 * time.Second
			}
			waits = append(waits, callerWait{"node-red-flow.json: " + n.Name, calledName(n.URL), w})
		}
	}

	m := regexp.MustCompile(`(?m)^const DEFAULT_TIMEOUT_S = (\d+);`).FindSubmatch(read("node-red-fusebox/call.js"))
	if m == nil {
		t.Fatal("node-red-fusebox/call.js: no DEFAULT_TIMEOUT_S")
	}
	s, _ := strconv.Atoi(string(m[1]))
	waits = append(waits, callerWait{"node-red-fusebox: the node's default", "", time.Duration(s) * time.Second})
	return waits
}

// The daemon answers every configured name before any documented caller
// gives up, also one that declares no wait of its own.
func TestTheDaemonAnswersEveryNameBeforeEveryRecipesCallerGivesUp(t *testing.T) {
	data, err := os.ReadFile("examples/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg, err := config.Parse(filepath.Join(dir, "config.yaml"), data, config.Env{
		Lookup:   func(string) (string, bool) { return "x", true },
		ReadFile: func(string) ([]byte, error) { return []byte("secret"), nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	store, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	endpoints, chains := cfg.Callables()
	srv, err := serve.New(serve.Targets{Endpoints: endpoints, Chains: chains, Circuits: cfg.CircuitNames()}, serve.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	waits := recipeWaits(t)
	if len(waits) < 5 {
		t.Fatalf("found %d callers in the recipes, want the HA sensors, the n8n node, the http request node and the Node-RED node: %v", len(waits), waits)
	}
	var names []string
	for _, ep := range endpoints {
		names = append(names, ep.Name)
	}
	for _, ch := range chains {
		names = append(names, ch.Name)
	}
	for _, c := range waits {
		if c.name != "" && !slices.Contains(names, c.name) {
			t.Errorf("%s calls %s, which examples/config.yaml does not define", c.recipe, c.name)
		}
	}
	for _, name := range names {
		for _, c := range waits {
			if c.name != "" && c.name != name {
				continue
			}
			longest, ok := srv.Longest(name, 0)
			if !ok {
				t.Fatalf("the daemon does not serve %s", name)
			}
			if longest >= c.wait {
				t.Errorf("%s: the daemon may take %s over %s, a caller that declares no wait; %s gives up after %s", name, longest, name, c.recipe, c.wait)
			}
		}
	}
}

// The example weather chain (openweather: attempts 2 of the default 10s;
// deadline 20s) with openweather answering, then hanging: the first call
// after it starts hanging is wttr's answer within the chain's deadline,
// not a 503 with "wttr: not tried" (issue 34 item 1). It is the call the
// Home Assistant sensor makes, with its headers; its wait, 30s, is longer
// than the chain's deadline, so the chain's deadline is what is shared.
func TestTheExampleChainsFallbackAnswersTheFirstCallAfterItsPrimaryStartsHanging(t *testing.T) {
	t.Parallel() // waits on timers: it runs beside the others
	sensors, _ := haExample(t)
	var sensor haSensor
	for _, s := range sensors {
		if calledName(s.Resource) == "weather" {
			sensor = s
		}
	}
	if sensor.Resource == "" {
		t.Fatal("examples/home-assistant.yaml has no sensor of the weather chain")
	}
	up := startUpstream(t)
	up.Release()
	d := exampleDaemon(t, up)
	wait := time.Duration(sensor.Timeout) * time.Second

	if resp, body := send(t, d, http.MethodGet, sensor.Resource, sensor.Headers, wait); resp.StatusCode != 200 || resp.Header.Get(serve.HeaderSource) != "openweather" {
		t.Fatalf("openweather up: %s from %q: %s", resp.Status, resp.Header.Get(serve.HeaderSource), body)
	}
	up.Slow(fakeapis.OpenWeatherMap, time.Hour) // accepts, and never answers within a call
	hits := up.Hits(fakeapis.OpenWeatherMap)
	start := time.Now()
	resp, body := send(t, d, http.MethodGet, sensor.Resource, sensor.Headers, wait)
	took := time.Since(start)
	t.Logf("the first call after openweather started hanging: %s from %q after %s", resp.Status, resp.Header.Get(serve.HeaderSource), took.Round(10*time.Millisecond))
	if resp.StatusCode != 200 || resp.Header.Get(serve.HeaderSource) != "wttr" {
		t.Errorf("%s from %q: %s; want wttr's answer", resp.Status, resp.Header.Get(serve.HeaderSource), body)
	}
	if up.Hits(fakeapis.OpenWeatherMap) == hits {
		t.Error("openweather was not asked: the call did not meet the hanging primary")
	}
	if took >= 20*time.Second {
		t.Errorf("answered after %s, past the chain's 20s deadline", took)
	}
}
