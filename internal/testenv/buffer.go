package testenv

import (
	"bytes"
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
