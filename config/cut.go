package config

import (
	"bytes"
	"slices"
)

// cutToCircuit returns data with every line blanked that is neither a
// top-level key's (chains: aside) nor circuits.NAME's, so that the YAML
// parser reads only what a run of that circuit needs and every line keeps
// its number. A household's config is mostly other circuits: parsing one of
// twenty cost a tenth of parsing them all.
//
// It reports false, and the whole file must be read, whenever its layout is
// not plainly block mappings that can be cut with certainty: anchors,
// aliases and merge keys (which reach across entries), tabs, carriage
// returns, a byte-order mark, document markers and directives, explicit,
// quoted or repeated keys, a flow-style circuits:, and a quote or bracket
// still open where an entry ends.
//
// It is a second reader of the file's layout, kept because no parse of the
// whole file comes within 0.2 ms of a run with no config (issue 23): in
// process, for the twenty circuits of BenchmarkLoadTwentyCircuits, Load
// takes 1.3-3.3 ms and LoadForRun 0.08-0.19 ms, while goccy/go-yaml's
// parse of the file into its AST alone takes 0.42-1.06 ms and its tokens
// alone 0.20-0.30 ms, so decoding only the named circuit out of the whole
// file's AST cannot get there (go test -run '^$' -bench LoadTwentyCircuits
// ./config/). Whole-process timings, 2026-12-02, a shared 2-core machine,
// 100 alternating pairs each, medians, "fusebox run NAME -- true" on a
// closed circuit: with the cut, twenty circuits are 1.03x and 1.05x no
// config; parsing the whole file, 1.13x no config and 1.19x the cut (about
// +2 ms on its 10 ms). FuzzCutToCircuit checks that wherever it cuts and
// the whole file parses, the circuit decoded from the cut, and every
// top-level value run reads, equal the whole file's.
func cutToCircuit(data []byte, name string) ([]byte, bool) {
	if bytes.ContainsAny(data, "\t\r") || bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		return nil, false
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	keep := make([]bool, len(lines))
	var (
		sc       lineScanner
		top      string   // the top-level key whose entry this line is in
		tops     []string // the top-level keys seen
		circuits []string // the circuits seen
		inner    = -1     // the indentation of circuits:'s keys, once known
		mine     bool     // the line is in circuits.NAME's entry
		block    = -1     // a block scalar's key's indentation, while in one
	)
	for i, line := range lines {
		text := bytes.TrimRight(line, "\n")
		indent := len(text) - len(bytes.TrimLeft(text, " "))
		content := text[indent:]
		if len(content) == 0 || content[0] == '#' {
			keep[i] = top != "chains" && (top != "circuits" || mine) // a comment or blank, part of what it is in
			continue
		}
		if block >= 0 && indent > block {
			keep[i] = top != "chains" && (top != "circuits" || mine) // a block scalar's text
			continue
		}
		block = -1
		switch {
		case indent == 0:
			if !sc.closed() {
				return nil, false
			}
			key, rest, ok := plainKey(content)
			if !ok || slices.Contains(tops, key) {
				return nil, false
			}
			tops = append(tops, key)
			top, mine = key, false
			if key == "circuits" && !blankOrComment(rest) {
				return nil, false // flow style: {a: …, b: …} on one line or more
			}
		case top == "circuits" && (inner < 0 || indent <= inner):
			if !sc.closed() || (inner >= 0 && indent < inner) {
				return nil, false
			}
			inner = indent
			key, _, ok := plainKey(content)
			if !ok || slices.Contains(circuits, key) {
				return nil, false
			}
			circuits = append(circuits, key)
			mine = key == name
		}
		keep[i] = top != "chains" && (top != "circuits" || mine || (indent == 0))
		blockStart, ok := sc.scan(content)
		if !ok {
			return nil, false
		}
		if blockStart {
			block = indent
		}
	}
	if !sc.closed() {
		return nil, false
	}
	out := make([]byte, 0, len(data))
	for i, line := range lines {
		if keep[i] {
			out = append(out, line...)
		} else if bytes.HasSuffix(line, []byte("\n")) {
			out = append(out, '\n')
		}
	}
	return out, true
}

// plainKey reads "KEY:" at the start of a line's content: a plain key of
// the characters names and config keys are made of, then a colon that ends
// the key (followed by a space or the end of the line). It returns the key
// and what follows the colon.
func plainKey(content []byte) (string, []byte, bool) {
	i := 0
	for i < len(content) && isNameByte(content[i]) {
		i++
	}
	if i == 0 || i == len(content) || content[i] != ':' || (i+1 < len(content) && content[i+1] != ' ') {
		return "", nil, false
	}
	if content[0] == '-' && (i == 1 || content[1] == ' ') {
		return "", nil, false
	}
	return string(content[:i]), content[i+1:], true
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

func blankOrComment(b []byte) bool {
	b = bytes.TrimLeft(b, " ")
	return len(b) == 0 || b[0] == '#'
}

// lineScanner follows, line by line, what may carry a YAML node over a line
// end: an open quote and open flow brackets. It reads loosely: a quote
// mark counts only where a scalar may start, and a bracket anywhere outside
// quotes and comments, so that what it cannot follow leaves something open
// and the whole file is read.
type lineScanner struct {
	quote byte // '"' or '\'' while in a quoted scalar, else 0
	depth int  // flow brackets open
}

func (s *lineScanner) closed() bool { return s.quote == 0 && s.depth == 0 }

// scan reads one line's content. It reports whether the line starts a block
// scalar (| or >), and false for what cannot be cut safely: an anchor, an
// alias, a merge key, an explicit key, a directive, a document marker, or a
// closing bracket never opened.
func (s *lineScanner) scan(c []byte) (blockScalar, ok bool) {
	if c[0] == '%' || bytes.HasPrefix(c, []byte("---")) || bytes.HasPrefix(c, []byte("...")) || bytes.HasPrefix(c, []byte("<<")) {
		return false, false
	}
	start := s.quote == 0 // where a scalar may start: the line's beginning, unless in a quote
	for i := 0; i < len(c); i++ {
		b := c[i]
		switch s.quote {
		case '"':
			if b == '\\' {
				i++
			} else if b == '"' {
				s.quote = 0
			}
			continue
		case '\'':
			if b == '\'' {
				if i+1 < len(c) && c[i+1] == '\'' {
					i++
				} else {
					s.quote = 0
				}
			}
			continue
		}
		spaceAfter := i+1 == len(c) || c[i+1] == ' '
		switch {
		case b == ' ':
			continue
		case b == '#' && (i == 0 || c[i-1] == ' '):
			return false, true // a comment, to the line's end
		case start && (b == '"' || b == '\''):
			s.quote = b
		case start && (b == '&' || b == '*'):
			return false, false
		case start && b == '?' && spaceAfter:
			return false, false
		case start && (b == '|' || b == '>') && s.depth == 0:
			return true, true // the rest of the line is the header's indicators and a comment
		case start && b == '!':
			for i+1 < len(c) && c[i+1] != ' ' { // a tag: the node after it may still start
				i++
			}
			continue
		case b == '[' || b == '{':
			s.depth++
		case b == ']' || b == '}':
			if s.depth--; s.depth < 0 {
				return false, false
			}
		}
		start = b == '[' || b == '{' || b == ',' || ((b == ':' || b == '-' || b == '?') && spaceAfter)
	}
	return false, true
}
