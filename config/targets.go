package config

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/internal/human"
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

// Warnings returns what the config allows but a user would not want, one
// line each, naming the file and line: a chain whose deadline, shared
// between its endpoints (httpcall's rule), leaves its last endpoint less
// than one attempt's timeout when every endpoint before it hangs. A chain
// with hedge: runs its endpoints side by side, so it has no such limit.
func (c *Config) Warnings() []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(c.Chains)) {
		ch := c.Chains[name]
		if len(ch.Endpoints) < 2 || ch.Hedge > 0 {
			continue
		}
		last := ch.Endpoints[len(ch.Endpoints)-1]
		share := ch.TotalDeadline(c.Policy) / time.Duration(len(ch.Endpoints))
		timeout := c.Policy(last).WithDefaults().Retry.Timeout
		if share >= timeout {
			continue
		}
		where := c.Path
		if s, ok := c.ChainSource(name, "deadline"); ok {
			where = fmt.Sprintf("%s:%d", s.File, s.Line)
		}
		out = append(out, fmt.Sprintf("%s: chains.%s: a deadline of %s leaves %s, the last endpoint, %s when the ones before it hang: less than its %s timeout (a deadline of %s gives it one whole attempt)",
			where, name, human.Round(ch.TotalDeadline(c.Policy)), last, human.Round(share), human.Round(timeout),
			human.Round(timeout*time.Duration(len(ch.Endpoints)))))
	}
	return out
}
