package main

import (
	"math/rand/v2"
	"testing"

	"github.com/fusebox-hq/fusebox"
)

func TestContendWithoutJitterIsQuadratic(t *testing.T) {
	// Without jitter every loser retries in lockstep, so one client wins each
	// round: n + (n-1) + ... + 1 calls.
	s := defaultJitterSim(true)
	for _, n := range []int{1, 2, 10, 50} {
		calls, _ := contend(n, s.backoff(fusebox.JitterNone), s.Slot, rand.New(rand.NewPCG(1, 1)))
		if want := n * (n + 1) / 2; calls != want {
			t.Errorf("%d clients: %d calls, want %d", n, calls, want)
		}
	}
}

func TestContendOneClientWritesInTheFirstSlot(t *testing.T) {
	s := defaultJitterSim(true)
	for _, j := range jitterKinds {
		calls, done := contend(1, s.backoff(j), s.Slot, rand.New(rand.NewPCG(1, 1)))
		if calls != 1 || done != s.Slot {
			t.Errorf("%s: %d calls done at %s, want 1 call at %s", j, calls, done, s.Slot)
		}
	}
}

func TestJitterSimIsDeterministic(t *testing.T) {
	s := defaultJitterSim(true)
	s.Clients = []int{10, 40}
	a, b := s.Run(), s.Run()
	for _, j := range jitterKinds {
		for i := range a[j] {
			if a[j][i] != b[j][i] {
				t.Errorf("%s: run 1 gave %+v, run 2 %+v", j, a[j][i], b[j][i])
			}
		}
	}
}

func TestJitterSimHasTheBlogsShape(t *testing.T) {
	// The AWS blog's findings: no jitter is far worse in calls and time; full
	// jitter does the least work; equal jitter takes the longest of the
	// jittered kinds.
	s := defaultJitterSim(false)
	s.Clients = []int{60}
	res := s.Run()
	none, equal, full, dec := res[fusebox.JitterNone][0], res[fusebox.JitterEqual][0], res[fusebox.JitterFull][0], res[fusebox.JitterDecorrelated][0]
	if none.Calls < 3*full.Calls || none.Completion < 10*full.Completion {
		t.Errorf("no jitter %+v is not far worse than full %+v", none, full)
	}
	if full.Calls > equal.Calls || full.Calls > dec.Calls {
		t.Errorf("full jitter makes %.0f calls; equal %.0f, decorrelated %.0f", full.Calls, equal.Calls, dec.Calls)
	}
	if equal.Completion < full.Completion || equal.Completion < dec.Completion {
		t.Errorf("equal jitter finishes at %s; full %s, decorrelated %s", equal.Completion, full.Completion, dec.Completion)
	}
}

func TestContendCountsTheRetryAfterTheWait(t *testing.T) {
	// Two clients without jitter: one wins slot 0; the other waits First (5 ms,
	// less than a slot) and writes in slot 1.
	s := defaultJitterSim(true)
	calls, done := contend(2, s.backoff(fusebox.JitterNone), s.Slot, rand.New(rand.NewPCG(1, 1)))
	if calls != 3 || done != 2*s.Slot {
		t.Errorf("got %d calls done at %s, want 3 calls at %s", calls, done, 2*s.Slot)
	}
}
