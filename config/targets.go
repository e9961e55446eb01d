package config

import (
	"fmt"
	"maps"
	"slices"

	"github.com/fusebox-hq/fusebox/httpcall"
)

// CircuitNames returns the names of the config's circuits, sorted: its
// endpoints, watched circuits and those only commands run under. A nil
// Config has none.
func (c *Config) CircuitNames() []string {
	if c == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(c.Circuits))
}

// Callables returns copies of the config's endpoints and chains, each
// sorted by name. A nil Config has none.
func (c *Config) Callables() (endpoints []*httpcall.Endpoint, chains []*httpcall.Chain) {
	if c == nil {
		return nil, nil
	}
	for _, name := range slices.Sorted(maps.Keys(c.Circuits)) {
		if ep := c.Circuits[name].Endpoint; ep != nil {
			cp := *ep
			endpoints = append(endpoints, &cp)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Chains)) {
		cp := *c.Chains[name]
		cp.Endpoints = slices.Clone(cp.Endpoints)
		chains = append(chains, &cp)
	}
	return endpoints, chains
}

// Callable returns nil when name is an endpoint or chain of the config, and
// otherwise an error a person can act on: what name is instead, and where
// to define it.
func (c *Config) Callable(name string) error {
	switch {
	case c == nil:
		return fmt.Errorf("%s: no config file, so no endpoints: add it under circuits: with an http: block, or call it with --url URL", name)
	case c.Circuits[name] != nil && c.Circuits[name].Endpoint != nil, c.Chains[name] != nil:
		return nil
	}
	if circ, ok := c.Circuits[name]; ok && circ.Endpoint == nil {
		return fmt.Errorf("%s is a circuit without an http: block in %s; use 'fusebox run' for commands", name, c.Path)
	}
	return fmt.Errorf("no endpoint or chain named %s in %s", name, c.Path)
}
