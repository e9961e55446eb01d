package serve

import "sync"

// inFlight counts the calls running on each endpoint with a max_in_flight.
// It is safe for concurrent use.
type inFlight struct {
	mu sync.Mutex
	n  map[string]int
}

// acquire takes a slot on each of names whose limit (max_in_flight by
// endpoint; none: no limit) is above 0, all or none: it returns the first
// full one's name, or "" and the release.
func (f *inFlight) acquire(names []string, limits map[string]int) (full string, release func()) {
	limited := false
	for _, n := range names {
		limited = limited || limits[n] > 0
	}
	if !limited {
		return "", noRelease // nothing to count, and no lock to take
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[string]int{}
	}
	var taken []string
	for _, n := range names {
		if l := limits[n]; l > 0 {
			if f.n[n] >= l {
				return n, nil
			}
			taken = append(taken, n)
		}
	}
	for _, n := range taken {
		f.n[n]++
	}
	return "", func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, n := range taken {
			f.n[n]--
		}
	}
}

func noRelease() {}
