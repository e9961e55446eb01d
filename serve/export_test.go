package serve

import "github.com/fusebox-hq/fusebox/httpcall"

// HopHeaders are the response headers an answer does not pass on.
var HopHeaders = hopHeaders

// Answered returns how many calls the daemon has answered or failed so far
// (each is counted before its answer is written).
func (s *Server) Answered() uint64 {
	s.counters.mu.Lock()
	defer s.counters.mu.Unlock()
	var n uint64
	for _, v := range s.counters.requests {
		n += v
	}
	return n
}

// MaxConns returns the cap on connections open at once.
func (s *Server) MaxConns() int { return s.o.MaxConns }

// JQMemory returns the bound the daemon's jq programs share.
func (s *Server) JQMemory() *httpcall.JQMemory { return s.jqMemory }
