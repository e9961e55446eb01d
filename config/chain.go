package config

import (
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/httpcall"
)

// chainDef is a chain as written, before nested chains are inlined.
type chainDef struct {
	entry
	chain *httpcall.Chain
	names []ast.Node // endpoints: circuit or chain names
	hedge *entry     // its hedge: key, when set
	refs  keyRefs    // where fresh, stale, deadline and hedge were set
}

// chainDef reads the chain named e and, when its name is a valid one no
// circuit has, adds it to t.chains.
func (l *loader) chainDef(e entry, b *block, t *topRead) {
	d := &chainDef{entry: e, chain: &httpcall.Chain{Name: e.name}, refs: keyRefs{}}
	given, ok := l.read(e, b, d, d.refs, "")
	if stale, has := lookup(given, "stale"); has {
		if c := d.chain; c.Fresh > 0 && c.Stale > 0 && c.Fresh >= c.Stale {
			l.errorAt(stale, stale.path, "must be longer than fresh (%s): an answer is served stale only once it is no longer fresh", c.Fresh)
		}
	}
	if _, has := lookup(given, "endpoints"); ok && !has {
		l.errorAt(e, e.path, "endpoints is required: list the circuits (or chains) to try in turn")
	}
	if err := fusebox.ValidateName(e.name); err != nil {
		l.errorAt(e, e.path, "%v", err)
		return
	}
	if other, clash := t.circuits[e.name]; clash {
		l.errorAt(e, e.path, "%s is also the name of a circuit (line %d): a chain needs a name of its own", e.name, other.key.Position.Line)
		return
	}
	t.chains = append(t.chains, d)
}

// chains inlines the nested chains of t's and adds them to t.c, once every
// chain is read.
func (l *loader) chains(t *topRead) {
	defs := make(map[string]*chainDef, len(t.chains))
	for _, d := range t.chains {
		defs[d.name] = d
	}
	f := flattener{l: l, defs: defs, circuits: t.c.Circuits, done: map[string]bool{}}
	for _, d := range t.chains {
		d.chain.Endpoints = f.flatten(d)
		l.checkHedge(d, t.c)
		t.c.Chains[d.name] = d.chain
		t.c.chainSources[d.name] = l.sources(d.refs)
	}
}

// checkHedge reports a hedge that could never start an endpoint: in a
// chain of one endpoint, or as long as the chain's deadline (its own, else
// the sum of its endpoints'). It runs once the chain's endpoints are known.
func (l *loader) checkHedge(d *chainDef, c *Config) {
	ch := d.chain
	if d.hedge == nil || ch.Hedge == 0 || l.probs.hasKey(join(d.path, "endpoints")) {
		return // no hedge, or one already reported, or endpoints whose problems say more
	}
	if len(ch.Endpoints) == 1 {
		l.errorAt(*d.hedge, d.hedge.path, "needs a chain of two endpoints or more: it starts the next beside the one being tried, and %s has only %s", d.name, ch.Endpoints[0])
		return
	}
	dl := ch.TotalDeadline(c.Policy)
	switch {
	case ch.Hedge < dl:
	case ch.Deadline > 0:
		l.errorAt(*d.hedge, d.hedge.path, "must be shorter than the chain's deadline (%s): a hedge that long never starts", dl)
	default:
		l.errorAt(*d.hedge, d.hedge.path, "must be shorter than the chain's deadline, %s (the sum of its endpoints' deadlines, as it sets none): a hedge that long never starts", dl)
	}
}

// endpointNames reads the endpoints: list, which names each entry once.
func (l *loader) endpointNames(e entry) []ast.Node {
	items, ok := l.list(e.value, e.path, "circuit or chain names, like [a, b]")
	if ok && len(items) == 0 {
		l.errorAt(e, e.path, "a chain needs at least one endpoint")
	}
	var seen []string
	var names []ast.Node
	for _, item := range items {
		name, ok := l.text(item, e.path, "a circuit or chain name")
		switch {
		case !ok:
		case slices.Contains(seen, name):
			l.errorf(item, e.path, "%s is listed twice", name)
		default:
			seen = append(seen, name)
			names = append(names, l.resolve(item, e.path))
		}
	}
	return names
}

// flattener inlines nested chains, finding unknown names and cycles.
type flattener struct {
	l        *loader
	defs     map[string]*chainDef
	circuits map[string]*Circuit
	done     map[string]bool
	stack    []string // the chains being flattened, outermost first
}

// flatten returns the circuits d tries, in order, each once.
func (f *flattener) flatten(d *chainDef) []string {
	if f.done[d.name] {
		return d.chain.Endpoints
	}
	f.stack = append(f.stack, d.name)
	var out []string
	for _, n := range d.names {
		name := scalarText(n)
		path := join(d.path, "endpoints")
		if sub, ok := f.defs[name]; ok {
			if i := slices.Index(f.stack, name); i >= 0 {
				cycle := append(slices.Clone(f.stack[i:]), name)
				f.l.errorf(n, path, "chains form a cycle: %s", strings.Join(cycle, " → "))
				continue
			}
			out = appendNew(out, f.flatten(sub)...)
			continue
		}
		circ, ok := f.circuits[name]
		switch {
		case !ok:
			f.l.errorf(n, path, "no circuit or chain is named %s", name)
		case circ.Endpoint == nil:
			f.l.errorf(n, path, "circuit %s has no http: block, so a chain cannot call it", name)
		default:
			out = appendNew(out, name)
		}
	}
	f.stack = f.stack[:len(f.stack)-1]
	f.done[d.name] = true
	d.chain.Endpoints = out
	return out
}

// appendNew appends the names that list lacks.
func appendNew(list []string, names ...string) []string {
	for _, n := range names {
		if !slices.Contains(list, n) {
			list = append(list, n)
		}
	}
	return list
}
