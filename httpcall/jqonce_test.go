package httpcall_test

import (
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/mem"
)

const jqConfig = `mqtt: {broker: 'tcp://127.0.0.1:1883'}
circuits:
  weather:
    http:
      url: http://127.0.0.1:1/weather
      expect: {jq: '.main.temp != null'}
      extract: '.main.temp'
  sensor:
    http: {url: http://127.0.0.1:1/sensor, extract: '.items[0].value'}
  bridge:
    health:
      mqtt: {topic: zigbee2mqtt/bridge/state, up: '(.state? // .) == "online"'}
`

// endpointsOf returns the config's endpoints.
func endpointsOf(c *config.Config) []*httpcall.Endpoint {
	return []*httpcall.Endpoint{c.Circuits["weather"].Endpoint, c.Circuits["sensor"].Endpoint}
}

func TestAProgramConfigCompiledIsNotCompiledAgain(t *testing.T) {
	c, err := config.Parse("/cfg/config.yaml", []byte(jqConfig), config.Env{})
	if err != nil {
		t.Fatal(err)
	}
	client, err := httpcall.New(mem.New(), endpointsOf(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range endpointsOf(c) {
		if !ep.Extract.IsCompiled() || !ep.Expect.JQ.IsZero() && !ep.Expect.JQ.IsCompiled() {
			t.Errorf("%s: config kept a program uncompiled", ep.Name)
		}
		if !client.RunsCompiled(ep.Name, ep.Expect.JQ, ep.Extract) {
			t.Errorf("%s: the client compiled config's programs again", ep.Name)
		}
	}
	up := c.Watch("bridge").Up
	cond, err := httpcall.NewCondition(up)
	if err != nil {
		t.Fatal(err)
	}
	if !up.IsCompiled() || !cond.RunsCompiled(up) {
		t.Error("the watch's up: was compiled again")
	}
}

func TestAnUncheckedProgramIsCompiledWhenTheClientIsBuilt(t *testing.T) {
	c, err := config.Parse("/cfg/config.yaml", []byte(jqConfig), config.Env{UncheckedJQ: true})
	if err != nil {
		t.Fatal(err)
	}
	weather := c.Circuits["weather"].Endpoint
	if weather.Extract.IsCompiled() || weather.Extract.String() != ".main.temp" {
		t.Fatalf("unchecked extract = %q, compiled %v; want the text alone", weather.Extract, weather.Extract.IsCompiled())
	}
	broken := *weather
	broken.Name, broken.Extract = "broken", httpcall.JQSource(".main |")
	_, err = httpcall.New(mem.New(), []*httpcall.Endpoint{weather, &broken}, nil)
	if err == nil || !strings.Contains(err.Error(), "endpoint broken: extract: ") {
		t.Fatalf("New with an unchecked broken program: %v, want its extract reported", err)
	}
}
