package serve

// Waiting returns how many callers wait for the shared GET call of name
// (without subpath or query) under way.
func (s *Server) Waiting(name string) int { return s.flights.waiting(name + "\x00\x00") }

// HopHeaders are the response headers an answer does not pass on.
var HopHeaders = hopHeaders
