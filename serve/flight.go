package serve

import (
	"errors"
	"sync"

	"github.com/fusebox-hq/fusebox/httpcall"
)

// flights lets callers asking for the same thing at the same moment share
// one call: the first runs it, those arriving while it runs wait for its
// result. It is safe for concurrent use.
type flights struct {
	mu sync.Mutex
	m  map[string]*flight
}

var errCallPanicked = errors.New("the shared call failed unexpectedly")

type flight struct {
	waiters int            // callers waiting for it, besides the one running it; under flights.mu
	done    sync.WaitGroup // done when res and err are set
	res     *httpcall.Result
	err     error
}

// do runs fn under key, or waits for the run already under way; shared
// says the result came from another caller's run. Results are read-only.
func (f *flights) do(key string, fn func() (*httpcall.Result, error)) (res *httpcall.Result, err error, shared bool) {
	f.mu.Lock()
	if fl, ok := f.m[key]; ok {
		fl.waiters++
		f.mu.Unlock()
		fl.done.Wait()
		return fl.res, fl.err, true
	}
	if f.m == nil {
		f.m = map[string]*flight{}
	}
	fl := &flight{}
	fl.done.Add(1)
	f.m[key] = fl
	f.mu.Unlock()

	defer func() {
		f.mu.Lock()
		delete(f.m, key)
		f.mu.Unlock()
		fl.done.Done()
	}()
	fl.err = errCallPanicked // until fn returns: waiters of a run that panicked get it
	fl.res, fl.err = fn()
	return fl.res, fl.err, false
}

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

// waiting returns how many callers wait for key's run.
func (f *flights) waiting(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl, ok := f.m[key]; ok {
		return fl.waiters
	}
	return 0
}
