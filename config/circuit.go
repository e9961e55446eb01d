package config

import (
	"github.com/fusebox-hq/fusebox"
)

// circuits reads the circuits: section into c and returns where each valid
// circuit name was found. reported are the problems of defaults:, not to be
// reported again for every circuit that inherits them.
func (l *loader) circuits(sec entry, c *Config, reported map[fusebox.FieldError]bool) map[string]entry {
	where := map[string]entry{}
	entries, _ := l.mapping(sec.value, sec.path)
	for _, e := range entries {
		if l.scope.only != "" && e.name != l.scope.only {
			continue
		}
		l.circuit = e.name
		circ := l.readCircuit(e, c, reported)
		l.circuit = ""
		if err := fusebox.ValidateName(e.name); err != nil {
			l.errorAt(e, e.path, "%v", err)
			continue
		}
		c.Circuits[e.name] = circ
		where[e.name] = e
	}
	return where
}

// readCircuit reads one circuit: the defaults, then its own keys.
func (l *loader) readCircuit(e entry, c *Config, reported map[fusebox.FieldError]bool) *Circuit {
	p := c.Defaults
	rules := c.DefaultNotify
	if fr := p.Breaker.FailureRate; fr != nil {
		own := *fr
		p.Breaker.FailureRate = &own
	}
	if rb := p.Retry.Budget; rb != nil {
		own := *rb
		p.Retry.Budget = &own
	}
	refs := keyRefs{}
	var fresh, http, health *entry
	var skipExit *int
	entries, _ := l.mapping(e.value, e.path)
	for _, f := range entries {
		if l.policyKey(f, &p, refs) {
			continue
		}
		switch f.name {
		case "fresh":
			fresh = &f
		case "http":
			http = &f
		case "health":
			health = &f
		case "notify":
			rules = l.notifyRules(f, rules)
		case "skip_exit":
			if n, ok := l.integer(f.value, f.path); ok && (n < 0 || n > 255) {
				l.errorAt(f, f.path, "want an exit status from 0 to 255, got %d", n)
			} else if ok {
				skipExit = &n
				refs["skip_exit"] = f
			}
		default:
			l.unknownKey(f, table().circuit.names()...)
		}
	}
	circ := &Circuit{Name: e.name, SkipExit: skipExit}
	if http != nil {
		circ.Endpoint = l.httpEndpoint(e.name, *http, &p, refs)
	}
	if fresh != nil {
		if circ.Endpoint == nil {
			l.errorAt(*fresh, fresh.path, "fresh needs an http: block in the same circuit")
		} else {
			set(&circ.Endpoint.Fresh)(l.duration(fresh.value, fresh.path))
		}
	}
	if health != nil {
		circ.Watch = l.circuitHealth(*health, e.name)
	}
	circ.sources = l.sources(refs)
	if l.watchUp != nil {
		circ.sources["health.mqtt.up"] = *l.watchUp
		l.watchUp = nil
	}
	delete(refs, "skip_exit") // not a policy key: validate knows nothing of it
	l.validate(p, refs, &e, reported)
	circ.Policy = p
	circ.Notify = rules
	if circ.Endpoint != nil {
		circ.Endpoint.Policy = p
	}
	return circ
}
