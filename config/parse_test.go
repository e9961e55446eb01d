package config

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/internal/retention"
	"github.com/fusebox-hq/fusebox/redirect"
)

// referenceEnv is what testdata/reference.yaml needs.
func referenceEnv() Env {
	return testEnv(
		map[string]string{"OWM_API_KEY": "owm-key-123"},
		map[string]string{
			"/run/secrets/ha_token": "ha-token-456\n",
			"testdata/secrets.yaml": "wttr_token: wttr-789\nunused: x\n",
		})
}

func TestParseReference(t *testing.T) {
	data, err := os.ReadFile("testdata/reference.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse("testdata/reference.yaml", data, referenceEnv())
	if err != nil {
		t.Fatal(err)
	}
	fr := &breaker.FailureRate{Threshold: 0.5, Window: 20, MinAttempts: 10}
	defaults := fusebox.Policy{
		Retry: fusebox.RetryPolicy{
			Attempts: 3,
			Backoff:  fusebox.Backoff{First: 2 * time.Second, Multiplier: 2, Max: 30 * time.Second, Jitter: fusebox.JitterFull},
			Timeout:  10 * time.Second,
			Deadline: 60 * time.Second,
		},
		Breaker: breaker.Policy{
			TripAfter: 3, FailureRate: fr, OpenFor: 30 * time.Second, OpenMultiplier: 2,
			OpenMax: 5 * time.Minute, Probes: 1, ProbeLease: 15 * time.Second,
		},
	}
	if c.Path != "testdata/reference.yaml" || c.State != "/var/lib/fusebox" || !c.Fsync || c.GCAfter != 7*24*time.Hour {
		t.Errorf("top level: got path %q state %q fsync %v gc_after %v", c.Path, c.State, c.Fsync, c.GCAfter)
	}
	if !reflect.DeepEqual(c.Defaults, defaults) {
		t.Errorf("defaults:\n got %+v\nwant %+v", c.Defaults, defaults)
	}

	z2m := defaults
	z2m.Retry.Attempts = 4
	z2m.Breaker.OpenFor = 3 * time.Minute
	if got := c.Policy("zigbee2mqtt"); !reflect.DeepEqual(got, z2m) {
		t.Errorf("zigbee2mqtt:\n got %+v\nwant %+v", got, z2m)
	}
	if c.Circuits["zigbee2mqtt"].Endpoint != nil {
		t.Error("zigbee2mqtt has an endpoint without http:")
	}

	owm := defaults
	owm.Retry.Attempts = 2
	owm.Retry.Timeout = 5 * time.Second // from http.timeout
	wantOWM := &httpcall.Endpoint{
		Name:    "openweather",
		URL:     "https://api.openweathermap.org/data/2.5/weather?q=Berlin&appid=owm-key-123",
		Method:  "GET",
		Headers: map[string]string{"Authorization": "Bearer ha-token-456"},
		Body:    "...",
		RetryOn: httpcall.RetryOn{Connect: true, Timeout: true, ServerErrors: true, TooManyRequests: true, Codes: []int{502}},
		Expect:  httpcall.Expect{Status: []int{200}},
		MaxBody: 10 << 20,
		Fresh:   10 * time.Minute,
		Policy:  owm,
		Secrets: []string{"owm-key-123", "ha-token-456"},
	}
	got := c.Circuits["openweather"]
	if jq, extract := got.Endpoint.Expect.JQ, got.Endpoint.Extract; jq.String() != ".main.temp != null" || extract.String() != ".main.temp" {
		t.Errorf("openweather: expect.jq %q, extract %q", jq, extract)
	}
	wantOWM.Expect.JQ, wantOWM.Extract = got.Endpoint.Expect.JQ, got.Endpoint.Extract // compiled: compared as text above
	if !reflect.DeepEqual(got.Endpoint, wantOWM) || !reflect.DeepEqual(got.Policy, owm) {
		t.Errorf("openweather:\n got %+v\nwant %+v", got.Endpoint, wantOWM)
	}

	wttr := c.Circuits["wttr"].Endpoint
	if wttr.Headers["X-Token"] != "wttr-789" || !slices.Equal(wttr.Secrets, []string{"wttr-789"}) {
		t.Errorf("wttr: headers %v secrets %v", wttr.Headers, wttr.Secrets)
	}
	if wttr.Method != "GET" || !reflect.DeepEqual(wttr.RetryOn, httpcall.DefaultRetryOn()) || wttr.MaxBody != httpcall.DefaultMaxBody {
		t.Errorf("wttr defaults: %+v", wttr)
	}

	wantChain := &httpcall.Chain{Name: "weather", Endpoints: []string{"openweather", "wttr"}, Fresh: 10 * time.Minute, Stale: 6 * time.Hour, Deadline: 20 * time.Second}
	if !reflect.DeepEqual(c.Chains["weather"], wantChain) {
		t.Errorf("chain:\n got %+v\nwant %+v", c.Chains["weather"], wantChain)
	}
	if want := []string{"owm-key-123", "ha-token-456", "wttr-789"}; !slices.Equal(c.Secrets, want) {
		t.Errorf("secrets: got %q, want %q", c.Secrets, want)
	}
}

func TestParseValid(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		check func(t *testing.T, c *Config)
	}{
		{"empty file means the defaults", "", func(t *testing.T, c *Config) {
			if c.State != "" || !c.Fsync || c.GCAfter != retention.GCAfter || !reflect.DeepEqual(c.Defaults, fusebox.Policy{}) {
				t.Errorf("got %+v", c)
			}
			if c.Circuits == nil || c.Chains == nil {
				t.Error("nil maps")
			}
		}},
		{"comments only", "# nothing yet\n", func(t *testing.T, c *Config) {}},
		{"circuit with no keys", "circuits:\n  backup:\n", func(t *testing.T, c *Config) {
			if c.Circuits["backup"] == nil || c.Circuits["backup"].Name != "backup" {
				t.Errorf("got %+v", c.Circuits)
			}
		}},
		{"failure_rate: null turns off the default's", `
defaults:
  failure_rate: {threshold: 0.25, window: 8}
circuits:
  a: {failure_rate: null}
  b: {failure_rate: {threshold: 100%, window: 4, min_attempts: 4}}
  c: {}
`, func(t *testing.T, c *Config) {
			if fr := c.Policy("a").Breaker.FailureRate; fr != nil {
				t.Errorf("a: got %+v, want none", fr)
			}
			if fr := c.Policy("b").Breaker.FailureRate; *fr != (breaker.FailureRate{Threshold: 1, Window: 4, MinAttempts: 4}) {
				t.Errorf("b: got %+v", fr)
			}
			if fr := c.Policy("c").Breaker.FailureRate; *fr != (breaker.FailureRate{Threshold: 0.25, Window: 8}) || fr == c.Defaults.Breaker.FailureRate {
				t.Errorf("c: got %+v, want an own copy of the default", fr)
			}
		}},
		{"retry_budget: a share, the long form, and null turning off the default's", `
defaults:
  retry_budget: 20%
circuits:
  a: {}
  b: {retry_budget: {percent: 0.5, min: 1, window: 1m}}
  c: {retry_budget: null}
  d:
    retry_budget:
      percent: 10%
`, func(t *testing.T, c *Config) {
			if rb := c.Policy("a").Retry.Budget; rb == nil || *rb != (fusebox.RetryBudget{Percent: 0.2}) || rb == c.Defaults.Retry.Budget {
				t.Errorf("a: got %+v, want an own copy of the default's 20%%", rb)
			}
			if rb := c.Policy("b").Retry.Budget; rb == nil || *rb != (fusebox.RetryBudget{Percent: 0.5, Min: 1, Window: time.Minute}) {
				t.Errorf("b: got %+v", rb)
			}
			if rb := c.Policy("c").Retry.Budget; rb != nil {
				t.Errorf("c: got %+v, want none", rb)
			}
			if rb := c.Policy("d").Retry.Budget; rb == nil || *rb != (fusebox.RetryBudget{Percent: 0.1}) {
				t.Errorf("d: got %+v", rb)
			}
			if s, ok := c.PolicySource("b", "retry_budget.min"); !ok || s.Key != "circuits.b.retry_budget.min" {
				t.Errorf("source of b's min: %v %v", s, ok)
			}
			if s, ok := c.PolicySource("a", "retry_budget"); !ok || s.Key != "defaults.retry_budget" {
				t.Errorf("source of a's budget: %v %v", s, ok)
			}
		}},
		{"relative state is beside the config", "state: state\n", func(t *testing.T, c *Config) {
			if c.State != "/etc/fusebox/state" {
				t.Errorf("got %q", c.State)
			}
		}},
		{"$$ and a lone $ stay literal", `
circuits:
  a:
    http:
      url: https://x/?a=$b&c=$$d
      body: 'cost: 5$'
      expect: {jq: '. as $x | $x.ok'}
`, func(t *testing.T, c *Config) {
			ep := c.Circuits["a"].Endpoint
			if ep.URL != "https://x/?a=$b&c=$d" || ep.Body != "cost: 5$" || ep.Expect.JQ.String() != ". as $x | $x.ok" {
				t.Errorf("got %q %q %q", ep.URL, ep.Body, ep.Expect.JQ)
			}
			if c.Secrets != nil || ep.Secrets != nil {
				t.Errorf("secrets: %q %q", c.Secrets, ep.Secrets)
			}
		}},
		{"retry_on: [] retries nothing; method, sizes and booleans", `
circuits:
  a:
    http:
      url: http://10.0.0.2:8080/hook
      method: post
      retry_on: []
      retry_unsafe: true
      trip_on_4xx: true
      max_body: 512 KB
      redirects: any
  b:
    http:
      url: https://b
      max_body: 1024
      retry_on: [429, timeout, 503, 503]
`, func(t *testing.T, c *Config) {
			a, b := c.Circuits["a"].Endpoint, c.Circuits["b"].Endpoint
			if a.Method != "POST" || !reflect.DeepEqual(a.RetryOn, httpcall.RetryOn{}) || !a.RetryUnsafe || !a.TripOn4xx || a.MaxBody != 512000 || a.Redirects != redirect.Any {
				t.Errorf("a: %+v", a)
			}
			if want := (httpcall.RetryOn{Timeout: true, TooManyRequests: true, Codes: []int{503}}); !reflect.DeepEqual(b.RetryOn, want) || b.MaxBody != 1024 || b.Redirects != "" {
				t.Errorf("b: %+v", b)
			}
		}},
		{"nested chains are inlined once each", `
circuits:
  a: {http: {url: https://a}}
  b: {http: {url: https://b}}
  c: {http: {url: https://c}}
chains:
  outer: {endpoints: [a, inner, c]}
  inner: {endpoints: [b, a], deadline: 5s}
`, func(t *testing.T, c *Config) {
			if got := c.Chains["outer"].Endpoints; !slices.Equal(got, []string{"a", "b", "c"}) {
				t.Errorf("outer: %q", got)
			}
			if got := c.Chains["inner"]; !slices.Equal(got.Endpoints, []string{"b", "a"}) || got.Deadline != 5*time.Second {
				t.Errorf("inner: %+v", got)
			}
		}},
		{"hedge", `
circuits:
  a: {http: {url: https://a}}
  b: {http: {url: https://b}}
chains:
  fast: {endpoints: [a, b], hedge: 150ms, deadline: 5s}
  outer: {endpoints: [fast, a]}
`, func(t *testing.T, c *Config) {
			if got := c.Chains["fast"]; got.Hedge != 150*time.Millisecond || got.Deadline != 5*time.Second {
				t.Errorf("fast: %+v", got)
			}
			if got := c.Chains["outer"]; got.Hedge != 0 || !slices.Equal(got.Endpoints, []string{"a", "b"}) {
				t.Errorf("outer: %+v; want a nested chain's hedge not to apply", got)
			}
		}},
		{"anchors, aliases and merge keys", `
circuits:
  a:
    attempts: 5
    http: &api
      url: https://api/a
      headers: &auth {Authorization: "Bearer ${TOKEN}"}
      retry_on: [connect]
  b:
    http:
      <<: *api
      url: https://api/b
      headers: *auth
`, func(t *testing.T, c *Config) {
			b := c.Circuits["b"].Endpoint
			if b.URL != "https://api/b" || b.Headers["Authorization"] != "Bearer tok" || !reflect.DeepEqual(b.RetryOn, httpcall.RetryOn{Connect: true}) {
				t.Errorf("b: %+v", b)
			}
			if c.Policy("b").Retry.Attempts != 0 {
				t.Error("b inherited a's attempts")
			}
			if !slices.Equal(c.Secrets, []string{"tok"}) || !slices.Equal(b.Secrets, []string{"tok"}) {
				t.Errorf("secrets %q, b's %q", c.Secrets, b.Secrets)
			}
		}},
		{"merge keys do not make the work grow exponentially", mergeBomb(30), func(t *testing.T, c *Config) {
			if got := c.Policy("a30").Retry.Attempts; got != 1 {
				t.Errorf("a30 has %d attempts, want 1 (merged from a0)", got)
			}
		}},
		{"numbers as names, float multipliers, percentages with fractions", `
defaults:
  multiplier: 1.5
  failure_rate: {threshold: 12.5%, window: 8}
circuits:
  404: {}
`, func(t *testing.T, c *Config) {
			if c.Defaults.Retry.Backoff.Multiplier != 1.5 || c.Defaults.Breaker.FailureRate.Threshold != 0.125 || c.Circuits["404"] == nil {
				t.Errorf("got %+v %+v", c.Defaults, c.Circuits)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("/etc/fusebox/config.yaml", yaml(tt.yaml), testEnv(map[string]string{"TOKEN": "tok"}, nil))
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestPolicyOfUnknownCircuitIsTheDefaults(t *testing.T) {
	c, err := Parse("c.yaml", yaml("defaults:\n  attempts: 7\n"), Env{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Policy("unnamed").Retry.Attempts; got != 7 {
		t.Errorf("got %d attempts, want 7", got)
	}
	var none *Config
	if got := none.Policy("x"); !reflect.DeepEqual(got, fusebox.Policy{}) {
		t.Errorf("nil config: got %+v", got)
	}
}

func TestParseReadsOnlyThroughEnvAndOnlyWhatItNeeds(t *testing.T) {
	var read []string
	env := Env{ReadFile: func(p string) ([]byte, error) {
		read = append(read, p)
		return []byte("k: v\n"), nil
	}}
	if _, err := Parse("/c/config.yaml", yaml("circuits:\n  a: {http: {url: https://x}}\n"), env); err != nil {
		t.Fatal(err)
	}
	if len(read) != 0 {
		t.Errorf("read %q without a !secret or ${file:}", read)
	}
	src := yaml("state: !secret k\ncircuits:\n  a: {http: {url: https://x, body: '${file:body.txt}', headers: {A: !secret k}}}\n")
	if _, err := Parse("/c/config.yaml", src, env); err != nil {
		t.Fatal(err)
	}
	if want := []string{"/c/secrets.yaml", "/c/body.txt"}; !slices.Equal(read, want) {
		t.Errorf("read %q, want %q (secrets.yaml once, relative paths beside the config)", read, want)
	}
}

// mergeBomb returns circuits each merging the one before eight times over.
func mergeBomb(levels int) string {
	var b strings.Builder
	b.WriteString("\ncircuits:\n  a0: &a0 {attempts: 1}\n")
	for i := 1; i <= levels; i++ {
		prev := fmt.Sprintf("*a%d", i-1)
		fmt.Fprintf(&b, "  a%d: &a%d {<<: [%s]}\n", i, i, strings.Repeat(prev+", ", 7)+prev)
	}
	return b.String()
}

func TestSkipExitIsPerCircuit(t *testing.T) {
	c, err := Parse("c.yaml", []byte("circuits:\n  backup: {skip_exit: 0}\n  other: {}\n"), Env{})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := c.SkipExit("backup"); !ok || n != 0 {
		t.Errorf("backup: %d %v, want 0 set", n, ok)
	}
	for _, name := range []string{"other", "unknown"} {
		if _, ok := c.SkipExit(name); ok {
			t.Errorf("%s: skip_exit set, want not", name)
		}
	}
	if _, ok := (*Config)(nil).SkipExit("x"); ok {
		t.Error("no config: skip_exit set")
	}
}
