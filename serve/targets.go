package serve

import (
	"slices"

	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/notify"
)

// Targets are what the daemon serves: the endpoints and chains a caller may
// call (config.Config.Callables), the circuits whose health an MQTT topic
// tells (config.Config.Watches), and the names of every circuit the config
// has (watched ones included), which the API may trip and reset before any
// call has stored one.
type Targets struct {
	Endpoints []*httpcall.Endpoint // sorted by name
	Chains    []*httpcall.Chain    // sorted by name
	Watches   []notify.Watch       // sorted by circuit
	Circuits  []string             // sorted
}

// Has reports whether name is one of the endpoints or chains.
func (t Targets) Has(name string) bool {
	return slices.ContainsFunc(t.Endpoints, func(e *httpcall.Endpoint) bool { return e.Name == name }) ||
		slices.ContainsFunc(t.Chains, func(c *httpcall.Chain) bool { return c.Name == name })
}
