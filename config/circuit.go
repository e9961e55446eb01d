package config

import (
	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/notify"
)

// circuitRead is a circuit as its keys are read, and defaults: (its policy
// keys and notify:).
type circuitRead struct {
	name     string
	p        fusebox.Policy
	refs     keyRefs // where each sourced key was set
	rules    notify.Rules
	endpoint *httpcall.Endpoint // nil without an http: block
	watch    *notify.Watch
	upAt     *Source // where health.mqtt.up is set, if it is
	skipExit *int
}

// namedCircuit reads the circuit named e into t.c, and notes where it was
// named.
func (l *loader) namedCircuit(e entry, b *block, t *topRead) {
	l.circuit = e.name
	circ := l.readCircuit(e, b, t.c, t.reported)
	l.circuit = ""
	if err := fusebox.ValidateName(e.name); err != nil {
		l.errorAt(e, e.path, "%v", err)
		return
	}
	t.c.Circuits[e.name] = circ
	t.circuits[e.name] = e
}

// readCircuit reads one circuit: the defaults, then its own keys.
// reported are the problems of defaults:, not to be reported again.
func (l *loader) readCircuit(e entry, b *block, c *Config, reported map[fusebox.FieldError]bool) *Circuit {
	r := &circuitRead{name: e.name, p: c.Defaults, rules: c.DefaultNotify, refs: keyRefs{}}
	if fr := r.p.Breaker.FailureRate; fr != nil {
		own := *fr
		r.p.Breaker.FailureRate = &own
	}
	if rb := r.p.Retry.Budget; rb != nil {
		own := *rb
		r.p.Retry.Budget = &own
	}
	l.read(e, b, r, r.refs, "")
	circ := &Circuit{Name: e.name, Endpoint: r.endpoint, SkipExit: r.skipExit, Watch: r.watch}
	circ.sources = l.sources(r.refs)
	if r.upAt != nil {
		circ.sources["health.mqtt.up"] = *r.upAt
	}
	delete(r.refs, "skip_exit") // not a policy key: validate knows nothing of it
	l.validate(r.p, r.refs, &e, reported)
	circ.Policy = r.p
	circ.Notify = r.rules
	if circ.Endpoint != nil {
		circ.Endpoint.Policy = r.p
	}
	return circ
}

// skipExit reads the exit status of a skipped run: 0 to 255.
func (l *loader) skipExit(f entry, r *circuitRead) {
	if n, ok := l.integer(f.value, f.path); ok && (n < 0 || n > 255) {
		l.errorAt(f, f.path, "want an exit status from 0 to 255, got %d", n)
	} else if ok {
		r.skipExit = &n
	}
}
