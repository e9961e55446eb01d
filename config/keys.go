package config

import "strings"

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
