package serve

import "github.com/fusebox-hq/fusebox/httpcall"

// Waiting returns how many callers wait for the shared GET call of name
// (without subpath or query, by callers that declare no wait) under way.
func (s *Server) Waiting(name string) int {
	return s.flights.waiting(flightKey(name, "", "", CallBudget(s.o.Wait)))
}

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
