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
