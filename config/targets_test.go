package config

import (
	"strings"
	"testing"
)

func TestValidateWarnsWhenAChainsShareCannotHoldItsLastEndpointsAttempt(t *testing.T) {
	c, err := Parse("/etc/fusebox/config.yaml", yaml(`
circuits:
  a: {http: {url: "http://127.0.0.1:1/"}}
  b: {http: {url: "http://127.0.0.1:2/", timeout: 5s}}
  c: {http: {url: "http://127.0.0.1:3/"}}
chains:
  fits: {endpoints: [a, b], deadline: 10s}
  short:
    endpoints: [a, b, c]
    deadline: 20s
  hedged: {endpoints: [a, c], deadline: 2s, hedge: 1s}
  summed: {endpoints: [a, c]}
`), testEnv(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	got := c.Warnings()
	want := "/etc/fusebox/config.yaml:9: chains.short: a deadline of 20s leaves c, the last endpoint, 6.7s when the ones before it hang: less than its 10s timeout (a deadline of 30s gives it one whole attempt)"
	if len(got) != 1 || got[0] != want {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
	var none *Config
	if w := none.Warnings(); w != nil {
		t.Errorf("a nil config warns %v", w)
	}
}
