package testenv

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer is a bytes.Buffer safe for the writers a test has at once: a
// logger, a child's stderr copied by exec's goroutine, a server's log.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Lines returns the lines written that contain every one of subs, without
// their line ends.
func (s *Buffer) Lines(subs ...string) []string {
	var out []string
	for line := range strings.Lines(s.String()) {
		keep := true
		for _, sub := range subs {
			keep = keep && strings.Contains(line, sub)
		}
		if keep {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}
