package config

import (
	"fmt"
	"maps"
	"slices"

	"github.com/fusebox-hq/fusebox/spec"
)

// Targets are the endpoints and chains a config defines, each a copy a
// front end may adjust (a flag overriding a policy) without touching the
// Config: what httpcall.New takes.
type Targets struct {
	Endpoints []*spec.Endpoint // sorted by name
	Chains    []*spec.Chain    // sorted by name
	Watches   []Watch          // health: mqtt: blocks, sorted by circuit (for fusebox serve)
}

// Targets returns the config's endpoints and chains. A nil Config has none.
func (c *Config) Targets() Targets {
	var t Targets
	if c == nil {
		return t
	}
	for _, name := range slices.Sorted(maps.Keys(c.Circuits)) {
		if ep := c.Circuits[name].Endpoint; ep != nil {
			cp := *ep
			t.Endpoints = append(t.Endpoints, &cp)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Chains)) {
		cp := *c.Chains[name]
		cp.Endpoints = slices.Clone(cp.Endpoints)
		t.Chains = append(t.Chains, &cp)
	}
	t.Watches = c.Watches()
	return t
}

// Has reports whether name is one of the endpoints or chains.
func (t Targets) Has(name string) bool {
	return slices.ContainsFunc(t.Endpoints, func(e *spec.Endpoint) bool { return e.Name == name }) ||
		slices.ContainsFunc(t.Chains, func(c *spec.Chain) bool { return c.Name == name })
}

// Callable returns nil when name is an endpoint or chain of the config, and
// otherwise an error a person can act on: what name is instead, and where
// to define it.
func (c *Config) Callable(name string) error {
	switch {
	case c == nil:
		return fmt.Errorf("%s: no config file, so no endpoints: add it under circuits: with an http: block, or call it with --url URL", name)
	case c.Targets().Has(name):
		return nil
	}
	if circ, ok := c.Circuits[name]; ok && circ.Endpoint == nil {
		return fmt.Errorf("%s is a circuit without an http: block in %s; use 'fusebox run' for commands", name, c.Path)
	}
	return fmt.Errorf("no endpoint or chain named %s in %s", name, c.Path)
}
