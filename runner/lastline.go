package runner

import (
	"io"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// lastLineMax caps the stderr line a failure's reason carries.
const lastLineMax = 200

// lastLine passes a command's stderr through to w as it comes and keeps
// the last non-blank line written, at most lastLineMax bytes of it: what a
// failure's reason quotes ("exit status 7: curl: (7) Failed to connect").
// It is safe for concurrent use.
type lastLine struct {
	w io.Writer // nil: discard

	mu   sync.Mutex
	cur  []byte // the line being written, capped
	last string // the last complete non-blank line
}

func (l *lastLine) Write(p []byte) (int, error) {
	l.mu.Lock()
	for _, b := range p {
		if b == '\n' {
			l.endLine()
			continue
		}
		if len(l.cur) < lastLineMax+utf8.UTFMax {
			l.cur = append(l.cur, b)
		}
	}
	l.mu.Unlock()
	if l.w == nil {
		return len(p), nil
	}
	return l.w.Write(p)
}

// endLine keeps the line being written, when it is not blank.
func (l *lastLine) endLine() {
	if s := clean(l.cur); s != "" {
		l.last = s
	}
	l.cur = l.cur[:0]
}

// line returns the last non-blank line: an unfinished one if the command
// ended without a newline, else the last complete one; "" when none.
func (l *lastLine) line() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := clean(l.cur); s != "" {
		return s
	}
	return l.last
}

// clean makes b one printable line of at most lastLineMax bytes: control
// characters (a \r of a progress bar, escapes) become spaces, invalid
// UTF-8 is replaced, and a longer line is cut at a rune with "…".
func clean(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) <= lastLineMax {
		return s
	}
	cut := lastLineMax
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
