// Package history turns the events circuits store (fusebox.Store.AllEvents)
// into outages: one per outage of an endpoint, from the first failure that
// led to its circuit opening to the first success after it, with the reasons
// seen, the calls skipped meanwhile and the time those skips saved callers.
// Everything here is a pure function of the events, the policies and the
// time given; nothing reads a store or a clock.
package history

import (
	"cmp"
	"slices"
	"time"

	"github.com/fusebox-hq/fusebox"
)

// Outage is one outage of one circuit's endpoint.
type Outage struct {
	Circuit string `json:"circuit"`
	// Start is the first of the failures that led to the opening; Opened
	// the opening itself.
	Start  time.Time `json:"start"`
	Opened time.Time `json:"opened_at"`
	// End is the first success after the outage: the successful probe that
	// closed the circuit (or a reset by hand, see EndedBy). Zero while
	// Ongoing.
	End     time.Time `json:"end,omitzero"`
	Ongoing bool      `json:"ongoing"`
	EndedBy string    `json:"ended_by,omitempty"` // the closing's reason: "probe succeeded", "reset by hand"
	// Duration is End-Start, or now-Start while ongoing.
	Duration time.Duration `json:"-"`
	// Failures counts the failed attempts seen, Reasons them by reason, most
	// frequent first; TimedOut those a timeout or deadline cut short.
	Failures     int           `json:"failures"`
	TimedOut     int           `json:"timed_out"`
	Reasons      []ReasonCount `json:"reasons"`
	FailedProbes int           `json:"failed_probes"`
	// Skips counts the calls that failed fast on the open circuit; Saved
	// estimates the time they would have spent failing (see SkipCost).
	Skips uint64        `json:"skips"`
	Saved time.Duration `json:"-"`

	skipsAtOpen uint64
	policy      fusebox.Policy
}

// ReasonCount is one failure reason and how often it was seen.
type ReasonCount struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// Outages finds the outages in events (any order; every circuit's, as
// AllEvents returns them), newest first. policy gives each circuit's policy,
// with or without defaults filled in (nil means the defaults); now ends
// ongoing outages' durations.
//
// An opening by hand (fusebox trip) is maintenance, not an outage; closing
// by hand (fusebox reset) ends an outage. The skips of an ongoing outage are
// not in the events: CountSkipsTo adds them from the circuit's Counts.
func Outages(events []fusebox.Event, policy func(name string) fusebox.Policy, now time.Time) []Outage {
	if policy == nil {
		policy = func(string) fusebox.Policy { return fusebox.Policy{} }
	}
	events = slices.Clone(events)
	fusebox.SortEvents(events)
	trackers := map[string]*tracker{}
	var out []Outage
	for _, e := range events {
		t := trackers[e.Circuit]
		if t == nil {
			t = &tracker{policy: policy(e.Circuit).WithDefaults()}
			trackers[e.Circuit] = t
		}
		if o, ended := t.add(e); ended {
			out = append(out, o)
		}
	}
	for _, t := range trackers {
		if t.cur != nil {
			o := *t.cur
			o.Ongoing = true
			o.Duration = max(now.Sub(o.Start), 0)
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b Outage) int {
		if c := b.Start.Compare(a.Start); c != 0 {
			return c
		}
		return cmp.Compare(a.Circuit, b.Circuit)
	})
	return out
}

// CountSkipsTo sets an ongoing outage's skips from the circuit's skip total
// now (fusebox.Counts.Skips), and the time they saved.
func (o *Outage) CountSkipsTo(total uint64) {
	if !o.Ongoing || total < o.skipsAtOpen {
		return
	}
	o.Skips = total - o.skipsAtOpen
	o.Saved = o.saved()
}

// Since keeps the outages that were ongoing at or after t.
func Since(outages []Outage, t time.Time) []Outage {
	var out []Outage
	for _, o := range outages {
		if o.Ongoing || !o.End.Before(t) {
			out = append(out, o)
		}
	}
	return out
}

// tracker follows one circuit's events.
type tracker struct {
	policy  fusebox.Policy
	pending []fusebox.Event // counted failures since the last transition
	cur     *Outage
}

func (t *tracker) add(e fusebox.Event) (Outage, bool) {
	switch {
	case e.Kind == fusebox.EventFailure && t.cur != nil:
		t.cur.failure(e)
	case e.Kind == fusebox.EventFailure:
		t.pending = append(t.pending, e)
	case e.Kind != fusebox.EventTransition:
	case e.To == fusebox.Open && t.cur != nil:
		t.cur.FailedProbes++
	case e.To == fusebox.Open:
		t.cur = t.open(e)
		t.pending = nil
	case e.To == fusebox.Closed && t.cur != nil:
		o := *t.cur
		t.cur = nil
		o.End, o.EndedBy, o.Duration = e.Time, e.Reason, max(e.Time.Sub(o.Start), 0)
		if e.Skips >= o.skipsAtOpen {
			o.Skips = e.Skips - o.skipsAtOpen
		}
		o.Saved = o.saved()
		return o, true
	case e.To == fusebox.Closed:
		t.pending = nil
	}
	return Outage{}, false
}

// open starts an outage at an opening of a closed circuit.
func (t *tracker) open(e fusebox.Event) *Outage {
	o := &Outage{Circuit: e.Circuit, Start: e.Since, Opened: e.Time, skipsAtOpen: e.Skips, policy: t.policy}
	if o.Start.IsZero() {
		// Written before openings said when their failures began: take the
		// failures that can have tripped it.
		o.Start = e.Time
		if n := len(t.pending); n > 0 {
			o.Start = t.pending[max(n-t.policy.Breaker.TripAfter, 0)].Time
		}
	}
	for _, f := range t.pending {
		if !f.Time.Before(o.Start) {
			o.failure(f)
		}
	}
	return o
}

func (o *Outage) failure(e fusebox.Event) {
	o.Failures++
	if e.TimedOut {
		o.TimedOut++
	}
	for i := range o.Reasons {
		if o.Reasons[i].Reason == e.Reason {
			o.Reasons[i].Count++
			o.sortReasons()
			return
		}
	}
	o.Reasons = append(o.Reasons, ReasonCount{Reason: e.Reason, Count: 1})
}

func (o *Outage) sortReasons() {
	slices.SortStableFunc(o.Reasons, func(a, b ReasonCount) int { return cmp.Compare(b.Count, a.Count) })
}

func (o *Outage) saved() time.Duration {
	share := 0.0
	if o.Failures > 0 {
		share = float64(o.TimedOut) / float64(o.Failures)
	}
	return time.Duration(o.Skips) * SkipCost(o.policy, share)
}
