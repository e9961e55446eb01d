// Package history turns the events circuits store (fusebox.Admin.AllEvents)
// into outages: one per outage of an endpoint, from the first failure that
// led to its circuit opening to the first success after it, with the last
// failure before that success (the endpoint came back in between), the
// reasons seen, the calls skipped meanwhile and the time those skips saved
// callers. Events are read in the order their store appended them, not by
// their times, and times that cannot be true are ignored (see Ignored).
// Everything here is a pure function of the events, the policies and the
// time given; nothing reads a store or a clock.
package history

import (
	"cmp"
	"slices"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
)

// Outage is one outage of one circuit's endpoint. Its times never run
// backwards: Start ≤ Opened ≤ LastFailureAt ≤ End.
type Outage struct {
	Circuit string `json:"circuit"`
	// Start is the first of the failures that led to the opening; Opened
	// the opening itself.
	Start  time.Time `json:"start"`
	Opened time.Time `json:"opened_at"`
	// LastFailureAt is the last failure before End (while ongoing, the last
	// so far): the endpoint was still down then. It came back between
	// LastFailureAt and End; no event says when in between.
	LastFailureAt time.Time `json:"last_failure_at"`
	// End is the first success after the outage: the successful probe that
	// closed the circuit (or a reset by hand, see EndedBy). Zero while
	// Ongoing.
	End     time.Time `json:"end,omitzero"`
	Ongoing bool      `json:"ongoing"`
	EndedBy string    `json:"ended_by,omitempty"` // the closing's reason: "probe succeeded", "reset by hand"
	// Duration is End-Start, or now-Start while ongoing (LastFailureAt-Start
	// if longer: a clock that ran ahead): the longest the outage can have
	// lasted. DownAtLeast is the shortest.
	Duration time.Duration `json:"-"`
	// Failures counts the failed attempts seen, Reasons them by reason, most
	// frequent first; TimedOut those a timeout or deadline cut short.
	Failures     int           `json:"failures"`
	TimedOut     int           `json:"timed_out"`
	Reasons      []ReasonCount `json:"reasons"`
	FailedProbes int           `json:"failed_probes"`
	// Skips counts the calls that failed fast on the open circuit; Saved
	// estimates the time they would have spent failing, under the retry
	// policy the calls that opened (and reopened) the circuit ran under, as
	// their transitions record it (see SkipCost).
	Skips uint64        `json:"skips"`
	Saved time.Duration `json:"-"`

	spans []span // the skips of each open period that has ended
	mark  span   // the open period going on: the skip total at its start, and its policy
	seq   int    // its place among its circuit's outages, for ties
}

// DownAtLeast is LastFailureAt-Start: the outage lasted at least that long
// (and at most Duration).
func (o Outage) DownAtLeast() time.Duration { return max(o.LastFailureAt.Sub(o.Start), 0) }

// span is one open period's skips, and the policy the calls skipped in it
// are taken to have run under: the one the transition that began it
// records.
type span struct {
	skips  uint64
	policy fusebox.Policy
}

// ReasonCount is one failure reason and how often it was seen.
type ReasonCount struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// Outages finds the outages in events, newest first, and the events whose
// times it did not believe. events holds every circuit's events, each
// circuit's in the order its store appended them (as AllEvents returns
// them; circuits may interleave in any way). policy gives each circuit's
// policy (nil means the defaults): the trip threshold for events written
// before openings said when their failures began, and the retry policy of
// skipped calls for transitions written before they recorded their own. now
// ends ongoing outages' durations.
//
// An opening by hand (fusebox trip) is maintenance, not an outage; closing
// by hand (fusebox reset) ends an outage. The skips of an ongoing outage are
// not in the events: CountSkipsTo adds them from the circuit's Counts.
func Outages(events []breaker.Event, policy func(name string) fusebox.Policy, now time.Time) ([]Outage, []Ignored) {
	if policy == nil {
		policy = func(string) fusebox.Policy { return fusebox.Policy{} }
	}
	var names []string
	logs := map[string][]breaker.Event{}
	for _, e := range events {
		if logs[e.Circuit] == nil {
			names = append(names, e.Circuit)
		}
		logs[e.Circuit] = append(logs[e.Circuit], e)
	}
	var out []Outage
	var ignored []Ignored
	for _, name := range names {
		evs, doubts := place(logs[name], now)
		ignored = append(ignored, doubts...)
		t := &tracker{policy: policy(name).WithDefaults()}
		for _, e := range evs {
			if o, ended := t.add(e); ended {
				out = append(out, o)
			}
		}
		if t.cur != nil {
			o := *t.cur
			o.Ongoing = true
			o.Duration = max(now.Sub(o.Start), o.DownAtLeast())
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b Outage) int {
		if c := b.Start.Compare(a.Start); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Circuit, b.Circuit); c != 0 {
			return c
		}
		return cmp.Compare(b.seq, a.seq)
	})
	return out, ignored
}

// CountSkipsTo sets an ongoing outage's skips from the circuit's skip total
// now (fusebox.Counts.Skips), and the time they saved.
func (o *Outage) CountSkipsTo(total uint64) {
	if !o.Ongoing || total < o.mark.skips {
		return
	}
	o.Skips, o.Saved = o.skipped(span{total - o.mark.skips, o.mark.policy})
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
	pending []placed // counted failures since the last transition
	cur     *Outage
	closed  time.Time // when the last outage ended: the next cannot start before
	seq     int
}

func (t *tracker) add(e placed) (Outage, bool) {
	switch {
	case e.Kind == breaker.EventFailure && t.cur != nil:
		t.cur.failure(e)
	case e.Kind == breaker.EventFailure:
		t.pending = append(t.pending, e)
	case e.Kind != breaker.EventTransition:
	case e.To == breaker.Open && t.cur != nil:
		t.cur.FailedProbes++
		t.cur.LastFailureAt = e.at
		t.cur.nextSpan(e, t.policy)
	case e.To == breaker.Open:
		t.cur = t.open(e)
		t.pending = nil
	case e.To == breaker.Closed && t.cur != nil:
		o := *t.cur
		t.cur, t.closed = nil, e.at
		o.End, o.EndedBy, o.Duration = e.at, e.Reason, max(e.at.Sub(o.Start), 0)
		o.nextSpan(e, t.policy)
		o.Skips, o.Saved = o.skipped(span{})
		return o, true
	case e.To == breaker.Closed:
		t.pending = nil
	}
	return Outage{}, false
}

// open starts an outage at an opening of a closed circuit.
func (t *tracker) open(e placed) *Outage {
	t.seq++
	o := &Outage{Circuit: e.Circuit, Start: e.Since, Opened: e.at, LastFailureAt: e.at, seq: t.seq,
		mark: span{e.Skips, policyOf(e, t.policy)}}
	if e.Since.Before(Epoch) || e.Since.Before(t.closed) || e.Since.After(e.at) {
		// Written before openings said when their failures began, or at a
		// time that cannot be theirs: take the failures that can have
		// tripped it.
		o.Start = e.at
		if n := len(t.pending); n > 0 {
			o.Start = t.pending[max(n-t.policy.Breaker.TripAfter, 0)].at
		}
	}
	for _, f := range t.pending {
		if !f.at.Before(o.Start) {
			o.failure(f)
		}
	}
	o.LastFailureAt = e.at // the failure that tripped it, or a 429's
	return o
}

// policyOf is the policy the calls skipped after transition e are taken to
// have run under: the retry policy e records, else the circuit's.
func policyOf(e placed, circuit fusebox.Policy) fusebox.Policy {
	if r := e.Retry; r != (breaker.RetryRecord{}) { // zero fields mean defaults
		circuit.Retry = fusebox.RetryPolicy{
			Attempts: r.Attempts, Timeout: time.Duration(r.Timeout), Deadline: time.Duration(r.Deadline),
			Backoff: fusebox.Backoff{First: time.Duration(r.Backoff), Multiplier: r.Multiplier, Max: time.Duration(r.MaxDelay), Jitter: fusebox.Jitter(r.Jitter)},
		}
	}
	return circuit.WithDefaults()
}

// nextSpan ends the open period going on at transition e, which starts the
// next one (a failed probe) or ends the outage. A skip total that could not
// be read (0) or went down leaves the period going on.
func (o *Outage) nextSpan(e placed, circuit fusebox.Policy) {
	if e.Skips < o.mark.skips || e.Skips == 0 {
		return
	}
	o.spans = append(o.spans, span{e.Skips - o.mark.skips, o.mark.policy})
	o.mark = span{e.Skips, policyOf(e, circuit)}
}

// skipped is the outage's skips and the time they saved, with those of last
// (the open period going on) added.
func (o *Outage) skipped(last span) (uint64, time.Duration) {
	share := 0.0
	if o.Failures > 0 {
		share = float64(o.TimedOut) / float64(o.Failures)
	}
	var n uint64
	var saved time.Duration
	for _, s := range append(slices.Clip(o.spans), last) {
		n += s.skips
		saved += time.Duration(s.skips) * SkipCost(s.policy, share)
	}
	return n, saved
}

func (o *Outage) failure(e placed) {
	o.Failures++
	o.LastFailureAt = e.at
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
