package config

// The shape of the key table's entries (keytable.go), and read, which
// decodes a mapping through its block: strict keys, "did you mean", the
// order keys are decoded in, where sourced keys were set, and what
// fusebox run skips.

import "strings"

// A block is one mapping of the config: the keys it takes.
type block struct {
	doc      string
	keys     []key
	required []string // keys the loader requires
	// misplaced are keys that belong in another block, and the message
	// that says where, given instead of "unknown key".
	misplaced map[string]string
}

// A key is one key of a block and what its value is: a scalar or list (is),
// a mapping of keys (block), a mapping of names to mappings (each), a list
// of mappings (items), or a scalar or a mapping (is and block).
type key struct {
	name  string
	doc   string
	is    func() *schema // built only for the schema: a run never builds one
	block *block
	each  *block
	items *block
	def   any // the default, in the config's own form; nil when none is fixed
	// example is a value the loader accepts, for the test that decodes
	// every key; for each, the names of the entries.
	example any

	// decode reads the key's value into the target its block is read into
	// (the to of read); for each, it is called once per named entry, with
	// that entry. Keys are decoded in the block's order, whatever the
	// file's, so that a key may use what the keys before it set.
	decode func(l *loader, f entry, to any)
	// needs is a key that must be set beside this one, which is decoded
	// after it; alone is the problem reported when it is not.
	needs, alone string
	// sourced keys are recorded where they were set (read's refs): what
	// Config.PolicySource and ChainSource return, explain's value sources.
	sourced bool
	// run is what fusebox run of one circuit reads of the key.
	run runScope
}

// runScope is what fusebox run of one circuit (LoadForRun) reads of a key.
type runScope int

const (
	runReads       runScope = iota // the key, as Load reads it
	runReadsItsOwn                 // of its named entries, the run circuit's only
	runSkips                       // nothing: neither decoded nor checked
)

// into adapts a decoder of the target type T, that of the block it is a key
// of, to key.decode.
func into[T any](decode func(l *loader, f entry, to T)) func(*loader, entry, any) {
	return func(l *loader, f entry, to any) { decode(l, f, to.(T)) }
}

// key returns b's key named name, or nil.
func (b *block) key(name string) *key {
	for i := range b.keys {
		if b.keys[i].name == name {
			return &b.keys[i]
		}
	}
	return nil
}

// names are the names of b's keys, as the strict-key check lists them.
func (b *block) names() []string {
	out := make([]string, len(b.keys))
	for i, k := range b.keys {
		out[i] = k.name
	}
	return out
}

// with returns a block of b's keys and then more.
func (b *block) with(doc string, more ...key) *block {
	return &block{doc: doc, keys: append(append([]key(nil), b.keys...), more...)}
}

// unknownKey reports a key that is not one of want, suggesting the nearest.
func (l *loader) unknownKey(e entry, want ...string) {
	if s := nearest(e.name, want); s != "" {
		l.errorAt(e, e.path, "unknown key (did you mean %s?)", s)
		return
	}
	l.errorAt(e, e.path, "unknown key; want one of %s", strings.Join(want, ", "))
}

// nearest returns the candidate at most two edits from s, or "".
func nearest(s string, candidates []string) string {
	if len(s) > 64 {
		return ""
	}
	best, bestDist := "", 3
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Nearest returns the candidate at most two edits from s, or "": a front
// end's "did you mean" for names, as the config's own for keys.
func Nearest(s string, candidates []string) string { return nearest(s, candidates) }

// read decodes the mapping e with b's keys into to (key.decode), in b's
// order, and reports every other key: as misplaced, or as unknown with the
// nearest key b has. refs, when not nil, records where each sourced key
// was set, as prefix and its name. It returns the mapping's entries (lookup
// looks a key up in them), and whether e is a mapping (null is an empty
// one).
func (l *loader) read(e entry, b *block, to any, refs keyRefs, prefix string) ([]entry, bool) {
	entries, ok := l.mapping(e.value, e.path)
	for _, f := range entries {
		msg, misplaced := b.misplaced[f.name]
		switch {
		case b.key(f.name) != nil:
		case misplaced:
			l.errorAt(f, f.path, "%s", msg)
		default:
			l.unknownKey(f, b.names()...)
		}
	}
	for _, needing := range []bool{false, true} { // a key that needs another after it
		for i := range b.keys {
			k := &b.keys[i]
			f, isSet := lookup(entries, k.name)
			if !isSet || (k.needs != "") != needing {
				continue
			}
			if _, has := lookup(entries, k.needs); needing && !has {
				l.errorAt(f, f.path, "%s", k.alone)
				continue
			}
			l.decode(k, f, to)
			if k.sourced && refs != nil {
				refs[prefix+k.name] = f
			}
		}
	}
	return entries, ok
}

// lookup returns the entry of entries named name, if there is one.
func lookup(entries []entry, name string) (entry, bool) {
	for _, f := range entries {
		if f.name == name {
			return f, true
		}
	}
	return entry{}, false
}

// decode decodes the key k, set as f, into to: each named entry of it for
// a mapping of names; nothing, or one entry, of what fusebox run of one
// circuit does not read (k.run).
func (l *loader) decode(k *key, f entry, to any) {
	only := l.scope.only
	switch {
	case only != "" && k.run == runSkips:
	case k.each == nil:
		k.decode(l, f, to)
	default:
		named, _ := l.mapping(f.value, f.path)
		for _, e := range named {
			if only == "" || k.run != runReadsItsOwn || e.name == only {
				k.decode(l, e, to)
			}
		}
	}
}
