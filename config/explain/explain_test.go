package explain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/config/explain"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/mem"
)

var now = breaker.Instant{Wall: time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)}

const bridgeConfig = `defaults:
  attempts: 2
circuits:
  bridge:
    trip_after: 2
    open_for: 3m
    skip_exit: 99
  api:
    http: {url: "http://127.0.0.1:1/x", timeout: 2s}
  zigbee:
    health:
      mqtt: {topic: zigbee2mqtt/bridge/state, up: '.state == "online"'}
chains:
  weather: {endpoints: [api], stale: 1h}
mqtt: {broker: 'tcp://127.0.0.1:1883'}
`

// load writes yaml as a config file and loads it.
func load(t *testing.T, yaml string) *config.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// given is a Flags.Given that says yes to flags.
func given(flags ...string) func(string) bool {
	return func(f string) bool { return strings.Contains(" "+strings.Join(flags, " ")+" ", " "+f+" ") }
}

func build(t *testing.T, r explain.Request) explain.Explanation {
	t.Helper()
	if r.Store == nil {
		r.Store = mem.New()
	}
	if r.Now.Wall.IsZero() {
		r.Now = now
	}
	if r.Env.Getenv == nil {
		r.Env.Getenv = func(string) string { return "" }
	}
	e, err := explain.Build(context.Background(), r)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return e
}

func byKey(vs []explain.PolicyValue) map[string]explain.PolicyValue {
	m := map[string]explain.PolicyValue{}
	for _, v := range vs {
		m[v.Key] = v
	}
	return m
}

func TestEachValueSaysWhetherAFlagTheConfigOrTheDefaultSetIt(t *testing.T) {
	cfg := load(t, bridgeConfig)
	flags := explain.Flags{
		Policy: func(p fusebox.Policy) (fusebox.Policy, error) {
			p.Retry.Attempts = 5
			return p, nil
		},
		Given:    given("attempts"),
		SkipExit: 75,
	}
	e := build(t, explain.Request{Name: "bridge", Config: cfg, Flags: flags})
	if e.Kind != "circuit" || e.Action != "run" || *e.SkipExit != 99 {
		t.Errorf("bridge: kind %s, action %s, skip exit %d; want circuit, run, 99 (the config's)", e.Kind, e.Action, *e.SkipExit)
	}
	got := byKey(e.Policy)
	for _, want := range []explain.PolicyValue{
		{Key: "attempts", Value: "5", Source: "flag", Flag: "--attempts"},
		{Key: "trip_after", Value: "2", Source: "config", File: cfg.Path, Line: 5, ConfigKey: "circuits.bridge.trip_after"},
		{Key: "open_for", Value: "3m0s", Source: "config", File: cfg.Path, Line: 6, ConfigKey: "circuits.bridge.open_for"},
		{Key: "backoff", Value: "2s", Source: "default"},
		{Key: "probe_lease", Value: "12s", Source: "default (timeout + 2s)"},
		{Key: "skip_exit", Value: "99", Source: "config", File: cfg.Path, Line: 7, ConfigKey: "circuits.bridge.skip_exit"},
	} {
		if got[want.Key] != want {
			t.Errorf("%s: %+v, want %+v", want.Key, got[want.Key], want)
		}
	}
	if _, ok := got["retry_budget.percent"]; ok {
		t.Errorf("a circuit without a retry budget lists one: %+v", e.Policy)
	}
}

func TestSkipExitFromAFlagOverridesTheConfig(t *testing.T) {
	cfg := load(t, bridgeConfig)
	e := build(t, explain.Request{Name: "bridge", Config: cfg, Flags: explain.Flags{Given: given("skip-exit"), SkipExit: 70}})
	if *e.SkipExit != 70 || byKey(e.Policy)["skip_exit"] != (explain.PolicyValue{Key: "skip_exit", Value: "70", Source: "flag", Flag: "--skip-exit"}) {
		t.Errorf("skip exit %d, %+v; want 70 from --skip-exit", *e.SkipExit, byKey(e.Policy)["skip_exit"])
	}
}

func TestOpenMaxRaisedToOpenForIsTheFlags(t *testing.T) {
	e := build(t, explain.Request{Name: "nas", Flags: explain.Flags{
		Policy: func(p fusebox.Policy) (fusebox.Policy, error) {
			p.Breaker.OpenFor, p.Breaker.OpenMax = time.Hour, time.Hour
			return p, nil
		},
		Given: given("open-for"),
	}})
	if v := byKey(e.Policy)["open_max"]; v.Value != "1h0m0s" || v.Flag != "--open-for" {
		t.Errorf("open_max raised by --open-for: %+v", v)
	}
}

func TestAFlagsProblemIsReturnedAsItIs(t *testing.T) {
	bad := errors.New("--trip-after: must be at least 1")
	_, err := explain.Build(context.Background(), explain.Request{Name: "nas", Store: mem.New(), Now: now, Flags: explain.Flags{
		Policy: func(p fusebox.Policy) (fusebox.Policy, error) { return p, bad },
	}})
	if err != bad {
		t.Errorf("Build: %v, want the flags' own error", err)
	}
}

func TestAChainIsExplainedEndpointByEndpoint(t *testing.T) {
	cfg := load(t, bridgeConfig)
	e := build(t, explain.Request{Name: "weather", Config: cfg})
	if e.Kind != "chain" || len(e.Endpoints) != 1 || e.Endpoints[0].Name != "api" || e.Endpoints[0].Kind != "endpoint" || e.SkipExit != nil {
		t.Fatalf("chain: %+v", e)
	}
	got := byKey(e.Policy)
	for _, want := range []explain.PolicyValue{
		{Key: "deadline", Value: "1m0s (the sum of its endpoints' deadlines)", Source: "default"},
		{Key: "hedge", Value: "none: one endpoint at a time", Source: "default"},
		{Key: "fresh", Value: "none: every call asks", Source: "default"},
		{Key: "stale", Value: "1h0m0s", Source: "config", File: cfg.Path, Line: 14, ConfigKey: "chains.weather.stale"},
	} {
		if got[want.Key] != want {
			t.Errorf("the chain's %s: %+v, want %+v", want.Key, got[want.Key], want)
		}
	}
	if v := byKey(e.Endpoints[0].Policy)["timeout"]; v.Value != "2s" || v.ConfigKey != "circuits.api.http.timeout" {
		t.Errorf("the endpoint's timeout: %+v", v)
	}
	if e := build(t, explain.Request{Name: "api", Config: cfg}); e.Kind != "endpoint" {
		t.Errorf("api alone: kind %s, want endpoint", e.Kind)
	}
}

func TestATrippedCircuitWouldSkipUntilItsTripEnds(t *testing.T) {
	store := mem.New()
	if _, err := store.Update(context.Background(), "nas", func(s *breaker.State) ([]breaker.Event, bool) {
		return s.Trip(now, 10*time.Minute, ""), true
	}); err != nil {
		t.Fatal(err)
	}
	e := build(t, explain.Request{Name: "nas", Store: store, Flags: explain.Flags{SkipExit: 75}})
	if e.Action != "skip" || e.Until == nil || !e.Until.Equal(now.Wall.Add(10*time.Minute)) || !strings.Contains(e.Why, "tripped for maintenance") {
		t.Errorf("a tripped circuit: %+v", e)
	}
	var out bytes.Buffer
	if err := explain.WriteText(&out, e); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"nas (circuit): would skip until " + e.Until.Local().Format(time.TimeOnly) + ": tripped for maintenance",
		"\n  a run would exit 75 without running its command; a call would try the next endpoint or fail\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, out.String())
		}
	}
}

func TestAWatchedCircuitSaysWhereItsWatchIsSet(t *testing.T) {
	cfg := load(t, bridgeConfig)
	e := build(t, explain.Request{Name: "zigbee", Config: cfg})
	want := explain.Watched{Topic: "zigbee2mqtt/bridge/state", Up: `.state == "online"`, File: cfg.Path, Line: 12}
	if e.Watched == nil || *e.Watched != want {
		t.Errorf("watched: %+v, want %+v", e.Watched, want)
	}
}

func TestALearnedOpenPeriodSaysHowItWasLearned(t *testing.T) {
	cfg := load(t, "circuits:\n  bridge:\n    open_for: auto\n")
	v := byKey(build(t, explain.Request{Name: "bridge", Config: cfg}).Policy)["open_for"]
	if v.Value != "auto: 30s" || !strings.HasPrefix(v.Learned, "no outage recorded yet") || v.Line != 3 {
		t.Errorf("open_for: auto before any outage: %+v", v)
	}
}

// Build promises to change nothing: a damaged state file is reported, not
// moved aside.
func TestADamagedStateFileIsReportedNotRepaired(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nas.json")
	if err := os.WriteFile(path, []byte("{garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e := build(t, explain.Request{Name: "nas", Store: store})
	if e.Action != "run" || !strings.HasPrefix(e.Why, path+" is damaged") || !strings.Contains(e.Why, "a run moves it aside and starts afresh; closed") {
		t.Errorf("a damaged state: %+v", e)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "{garbage" {
		t.Errorf("the damaged file after Build: %q, %v; want it untouched", b, err)
	}
}

func TestTheStateAndConfigSayWhatChoseThem(t *testing.T) {
	home := t.TempDir()
	cfg := load(t, "state: /srv/fusebox\n")
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	for _, c := range []struct {
		name  string
		env   explain.Env
		cfg   *config.Config
		state string
	}{
		{"flag", explain.Env{StateFlag: "/x", Getenv: env(nil)}, nil, "flag --state"},
		{"environment", explain.Env{Getenv: env(map[string]string{"FUSEBOX_STATE_DIR": "/x"})}, nil, "env $FUSEBOX_STATE_DIR"},
		{"config", explain.Env{Getenv: env(nil)}, cfg, "config " + cfg.Path + " (state)"},
		{"systemd", explain.Env{Getenv: env(map[string]string{"STATE_DIRECTORY": "/x"})}, nil, "env $STATE_DIRECTORY"},
		{"home", explain.Env{Getenv: env(nil), Home: home, EUID: 1000}, nil, "env $HOME"},
	} {
		if got := explain.StateSource(c.env, c.cfg, "shown"); got != (explain.Setting{Value: "shown", Source: c.state}) {
			t.Errorf("%s: %+v, want source %q", c.name, got, c.state)
		}
	}
	for _, c := range []struct {
		name string
		env  explain.Env
		want explain.Setting
	}{
		{"flag", explain.Env{ConfigFlag: "/c.yaml", Getenv: env(nil)}, explain.Setting{Value: "/c.yaml", Source: "flag --config"}},
		{"environment", explain.Env{Getenv: env(map[string]string{"FUSEBOX_CONFIG": "/c.yaml"})}, explain.Setting{Value: "/c.yaml", Source: "env $FUSEBOX_CONFIG"}},
		{"none", explain.Env{Getenv: env(nil), Home: home}, explain.Setting{Value: "none", Source: "default (no ~/.config/fusebox/config.yaml or /etc/fusebox/config.yaml)"}},
	} {
		if _, err := os.Stat("/etc/fusebox/config.yaml"); err == nil && c.name == "none" {
			continue // this host has a config of its own
		}
		if got := explain.ConfigSource(c.env); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestTheTextAlignsEachPolicyInColumns(t *testing.T) {
	e := explain.Explanation{
		Name: "weather", Kind: "chain",
		State:  explain.Setting{Value: "/var/lib/fusebox", Source: "default"},
		Config: explain.Setting{Value: "/etc/fusebox/config.yaml", Source: "flag --config"},
		Policy: []explain.PolicyValue{{Key: "stale", Value: "1h0m0s", Source: "config", File: "/etc/fusebox/config.yaml", Line: 11, ConfigKey: "chains.weather.stale"}},
		Endpoints: []explain.Explanation{
			{Name: "api", Kind: "endpoint", Action: "run", Why: "closed", Policy: []explain.PolicyValue{
				{Key: "attempts", Value: "5", Source: "flag", Flag: "--attempts"},
				{Key: "open_for", Value: "auto: 30s", Source: "default", Learned: "no outage recorded yet"},
			}},
			{Name: "wttr", Kind: "endpoint", Action: "probe", Why: "half-open"},
		},
	}
	var out bytes.Buffer
	if err := explain.WriteText(&out, e); err != nil {
		t.Fatal(err)
	}
	want := `weather (chain): tries api, wttr in order; an endpoint that would skip is passed over at once
  api (endpoint): would run: closed
  wttr (endpoint): would probe: half-open

state   /var/lib/fusebox          default
config  /etc/fusebox/config.yaml  flag --config

policy of weather
  stale  1h0m0s  config /etc/fusebox/config.yaml:11 (chains.weather.stale)

policy of api
  attempts  5          flag --attempts
  open_for  auto: 30s  default; no outage recorded yet

policy of wttr
`
	if out.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestTheJSONUsesTheDocumentedNames(t *testing.T) {
	code := 75
	e := explain.Explanation{Name: "nas", Kind: "circuit", Action: "skip", SkipExit: &code,
		Policy: []explain.PolicyValue{{Key: "attempts", Value: "2", Source: "config", File: "/c", Line: 2, ConfigKey: "defaults.attempts"}}}
	var out bytes.Buffer
	if err := explain.WriteJSON(&out, e); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "kind", "action", "skip_exit", "state", "config", "policy"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q:\n%s", k, out.String())
		}
	}
	for _, k := range []string{"until", "why", "endpoints", "watched"} {
		if _, ok := m[k]; ok {
			t.Errorf("JSON has %q, which is empty:\n%s", k, out.String())
		}
	}
	if !strings.Contains(out.String(), `"config_key": "defaults.attempts"`) || !strings.HasSuffix(out.String(), "}\n") {
		t.Errorf("JSON:\n%s", out.String())
	}
}

func TestTheLongestCallSaysWhereItComesFrom(t *testing.T) {
	cfg := load(t, `
circuits:
  slow:
    attempts: 2
    http: {url: "http://127.0.0.1:1/", timeout: 10s}
  quick:
    attempts: 1
    http: {url: "http://127.0.0.1:2/", timeout: 3s}
  quicker:
    attempts: 1
    http: {url: "http://127.0.0.1:3/", timeout: 3s}
  nightly: {attempts: 5, deadline: 20s}
  backup: {attempts: 2, timeout: 10s}
chains:
  weather: {endpoints: [slow, quick], deadline: 20s}
  sum: {endpoints: [quick, quicker]}
`)
	budget := 24 * time.Second
	for _, tc := range []struct {
		name, from    string
		seconds, serv float64
	}{
		{"slow", "2 × its 10s timeout + waits of up to 2s; a server's Retry-After may stretch a wait, up to its 1m0s deadline", 22, 24},
		{"quick", "one attempt of its 3s timeout", 3, 3},
		{"nightly", "its deadline of 20s", 20, 0},
		{"backup", "2 × its 10s timeout + waits of up to 2s", 22, 0}, // a command sends no Retry-After
		{"weather", "the chain's deadline of 20s, shared: each endpoint has what is left divided by the endpoints still to try", 20, 20},
		{"sum", "its endpoints' longest calls, one after the other", 6, 6},
	} {
		e := build(t, explain.Request{Name: tc.name, Config: cfg, ServeBudget: budget})
		l := e.Longest
		if l == nil || l.From != tc.from || l.Seconds != tc.seconds || l.ServeSeconds != tc.serv {
			t.Errorf("%s: longest %+v; want %gs from %q, %gs through serve", tc.name, l, tc.seconds, tc.from, tc.serv)
		}
	}
	var b strings.Builder
	if err := explain.WriteText(&b, build(t, explain.Request{Name: "weather", Config: cfg, ServeBudget: budget})); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"longest call of weather: 20s, the chain's deadline of 20s, shared",
		"  through fusebox serve: at most 20s for a caller that declares no wait (X-Fusebox-Wait)",
		"  longest call of slow: 22s, 2 × its 10s timeout",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the text lacks %q:\n%s", want, b.String())
		}
	}
}
