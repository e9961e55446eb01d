package packaging_test

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/fusebox-hq/fusebox/internal/fakeapis"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// No Home Assistant runs here (it is not packaged for the test machines), so
// these tests send the requests its documented config makes — method, URL
// and the headers its HTTP client adds — to a real daemon, and read the
// answer the way it reads it. n8n and Node-RED run for real (n8n_test.go,
// nodered_test.go).

// documentedAddr is the daemon's address in every example.
const documentedAddr = "127.0.0.1:8417"

// send makes the request method url with headers, url's documented address
// replaced by the daemon's, and returns the answer, its body decoded as an
// HTTP client that sent Accept-Encoding decodes it.
func send(t *testing.T, d *daemon, method, url string, headers map[string]string, timeout time.Duration) (*http.Response, []byte) {
	t.Helper()
	if !strings.Contains(url, documentedAddr) {
		t.Fatalf("%s does not call the daemon at %s", url, documentedAddr)
	}
	req, err := http.NewRequest(method, strings.Replace(url, documentedAddr, d.Addr, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	client := &http.Client{Timeout: timeout}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	var body io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		if body, err = gzip.NewReader(resp.Body); err != nil {
			t.Fatal(err)
		}
	}
	b, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// haHeaders are those Home Assistant's RESTful integration (aiohttp) sends
// when the sensor sets none.
var haHeaders = map[string]string{
	"Accept":          "*/*",
	"Accept-Encoding": "gzip, deflate",
	"User-Agent":      "HomeAssistant/2025.12.0 aiohttp/3.13.2 Python/3.13",
}

// haSensor is a RESTful sensor of examples/home-assistant.yaml.
type haSensor struct {
	Platform      string            `yaml:"platform"`
	Name          string            `yaml:"name"`
	Resource      string            `yaml:"resource"`
	ValueTemplate string            `yaml:"value_template"`
	Availability  string            `yaml:"availability"`
	Timeout       int               `yaml:"timeout"`
	Headers       map[string]string `yaml:"headers"`
}

// haExample returns the sensors of examples/home-assistant.yaml, and its text.
func haExample(t *testing.T) ([]haSensor, string) {
	t.Helper()
	var cfg struct {
		Sensor []haSensor `yaml:"sensor"`
	}
	b, err := os.ReadFile("examples/home-assistant.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("examples/home-assistant.yaml: %v", err)
	}
	return cfg.Sensor, string(b)
}

// read requests the sensor's resource as Home Assistant does and returns
// whether the sensor is available and its state, rendered with Jinja2 as
// Home Assistant's RESTful sensor renders them in every release:
// availability over the body, then value_template (the status is not
// looked at). A template that logs an ERROR or a WARNING fails the test.
func (s haSensor) read(t *testing.T, d *daemon) (available bool, state any) {
	t.Helper()
	timeout := 10 * time.Second // the integration's default
	if s.Timeout > 0 {
		timeout = time.Duration(s.Timeout) * time.Second
	}
	headers := maps.Clone(haHeaders)
	maps.Copy(headers, s.Headers)
	_, b := send(t, d, http.MethodGet, s.Resource, headers, timeout)
	body := string(b)
	r := testenv.RenderAsHomeAssistant(t, testenv.HATemplates{Value: &body, ValueTemplate: s.ValueTemplate,
		Availability: s.Availability, Order: "availability_first"})
	if logged := append(r.Errors, r.Warnings...); len(logged) > 0 {
		t.Errorf("sensor %q: Home Assistant logs %q reading %s", s.Name, logged, body)
	}
	return r.Available, r.State
}

// TestHomeAssistantRESTSensors reads the sensors of
// examples/home-assistant.yaml from a real daemon: the temperature through
// the weather chain's fallbacks, unavailable (not 0 °C) when nothing
// answers, and a circuit's state from /api/circuits.
func TestHomeAssistantRESTSensors(t *testing.T) {
	t.Parallel()
	all, text := haExample(t)
	sensors := map[string]haSensor{}
	for _, s := range all {
		if s.Platform != "rest" {
			t.Errorf("sensor %q has platform %q, want rest", s.Name, s.Platform)
		}
		sensors[s.Name] = s
	}
	// The README shows the temperature sensor: as it is in the file.
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, shown, _ := strings.Cut(string(readme), "```yaml\nsensor:\n")
	shown, _, _ = strings.Cut(shown, "```")
	if shown == "" {
		t.Fatal("README.md shows no sensor: block")
	}
	for line := range strings.Lines(shown) {
		if line, _, _ = strings.Cut(line, " #"); strings.TrimSpace(line) != "" && !strings.Contains(text, line) {
			t.Errorf("README.md's sensor has %q, examples/home-assistant.yaml does not", line)
		}
	}
	temp, circuit := sensors["Outside temperature"], sensors["OpenWeatherMap circuit"]
	if temp.Resource == "" || circuit.Resource == "" {
		t.Fatalf("examples/home-assistant.yaml lacks the temperature or the circuit sensor: %+v", sensors)
	}
	if temp.Timeout <= 20 {
		t.Errorf("the temperature sensor's timeout %ds is not above the chain's 20s deadline", temp.Timeout)
	}
	if w := temp.Headers["X-Fusebox-Wait"]; w != strconv.Itoa(temp.Timeout) {
		t.Errorf("the temperature sensor sends X-Fusebox-Wait %q, want its timeout, %d", w, temp.Timeout)
	}

	up := startUpstream(t)
	up.Release()
	d := exampleDaemon(t, up)

	up.Down(fakeapis.OpenWeatherMap)
	up.Down(fakeapis.Wttr)
	if ok, state := temp.read(t, d); ok {
		t.Errorf("every endpoint down, nothing stored: the sensor is available with %v; want unavailable", state)
	}
	if _, state := circuit.read(t, d); !slices.Contains([]any{"closed", "open"}, state) {
		t.Errorf("circuit sensor after a failed call: %v, want closed or open", state)
	}
	d.post(t, "/api/circuits/openweather/trip")
	if _, state := circuit.read(t, d); state != "forced_open" {
		t.Errorf("circuit sensor after a trip: %v, want forced_open", state)
	}

	up.Up(fakeapis.OpenWeatherMap)
	up.Up(fakeapis.Wttr)
	d.post(t, "/api/circuits/wttr/reset")
	for _, step := range []struct {
		name string
		down []string
		want string
	}{
		{"OpenWeatherMap tripped: wttr.in's temperature", nil, "21.0"},
		{"OpenWeatherMap reset and up: its temperature", nil, "21.5"},
		{"both down: the stored temperature", []string{fakeapis.OpenWeatherMap, fakeapis.Wttr}, "21.5"},
	} {
		if step.want == "21.5" && step.down == nil {
			d.post(t, "/api/circuits/openweather/reset")
		}
		for _, api := range step.down {
			up.Down(api)
		}
		if ok, state := temp.read(t, d); !ok || state != step.want {
			t.Errorf("%s: available %v, state %v; want %v", step.name, ok, state, step.want)
		}
	}
	if _, state := circuit.read(t, d); state != "closed" && state != "open" {
		t.Errorf("circuit sensor at the end: %v, want closed or open", state)
	}
}

// TestHomeAssistantStateThroughTheDaemon reads a Home Assistant state at
// the URL the README gives for Node-RED: the ha endpoint's allow_subpath
// takes the path below its base, and the token comes from fusebox's config.
func TestHomeAssistantStateThroughTheDaemon(t *testing.T) {
	t.Parallel()
	const url = "http://127.0.0.1:8417/call/ha/api/states/sensor.garden_temp"
	if b, err := os.ReadFile("README.md"); err != nil || !strings.Contains(string(b), url) {
		t.Fatalf("README.md no longer gives %s (%v): change this test with it", url, err)
	}
	up := startUpstream(t)
	up.Release()
	d := exampleDaemon(t, up)
	resp, body := send(t, d, http.MethodGet, url, nil, 10*time.Second)
	var st struct {
		EntityID string `json:"entity_id"`
		State    string `json:"state"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &st) != nil || st.EntityID != "sensor.garden_temp" || st.State != "21.2" {
		t.Errorf("GET %s: %s %s; want sensor.garden_temp's state 21.2", url, resp.Status, body)
	}
}
