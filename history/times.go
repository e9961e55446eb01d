package history

import (
	"fmt"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/human"
)

// Epoch is the earliest event time Outages believes: fusebox wrote no event
// before it, so an earlier time is a board that booted without its clock
// set (1970) or a zero time (year 1).
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// ClockStep is how far an event's time may lie before the latest time its
// circuit's log reached before it and still be believed: an NTP correction,
// or the skew between the clocks of hosts sharing a Redis store, stays
// within it. A time that lies within it is counted at the time before it,
// silently.
const ClockStep = time.Minute

// FarFuture is how far after now an event's time may lie and still be
// believed. A clock that ran ahead still measures the time between its own
// events, so only a time no clock gets wrong by accident (a year, a century)
// is beyond belief.
const FarFuture = 24 * time.Hour

// Ignored is an event whose time Outages did not believe. The event still
// counts, in its place in the store's order (a failure, an opening, a
// closing), at At: the latest time believed before it in its circuit's
// log, or, for events at the head of the log, the first time believed after
// them.
type Ignored struct {
	Event breaker.Event
	Why   string // "before 2000", "more than 24h0m0s after now", "1h0m0s before the event stored before it"
	At    time.Time
}

// placed is an event with the time Outages counts it at.
type placed struct {
	breaker.Event
	at time.Time
}

// place gives each of one circuit's events, in the store's order, the time
// it is counted at: its own when believable (and not before the time
// reached so far), else the time reached so far. Times so placed never
// decrease. Events of a log with no believable time at all are left out,
// and reported with a zero At.
func place(events []breaker.Event, now time.Time) ([]placed, []Ignored) {
	out := make([]placed, 0, len(events))
	var ignored []Ignored
	var reached time.Time // zero until a time is believed
	head := 0             // events before the first believed time: placed when it comes
	for _, e := range events {
		why := doubt(e.Time, reached, now)
		switch {
		case why == "" && reached.IsZero():
			reached = e.Time
			for i := range out {
				out[i].at = reached
			}
			for i := range ignored[head:] {
				ignored[head+i].At = reached
			}
			head = len(ignored)
		case why == "" && e.Time.After(reached):
			reached = e.Time
		}
		if why != "" {
			ignored = append(ignored, Ignored{Event: e, Why: why, At: reached})
		}
		out = append(out, placed{e, reached})
	}
	if reached.IsZero() {
		return nil, ignored
	}
	return out, ignored
}

// doubt says why t, the time of an event whose circuit's log had reached
// reached (zero: nothing believed yet), is not to be believed at now, or ""
// when it is.
func doubt(t, reached, now time.Time) string {
	switch {
	case t.Before(Epoch):
		return "before " + Epoch.Format("2006")
	case t.Sub(now) > FarFuture:
		return "more than " + human.Round(FarFuture).String() + " after now"
	case !reached.IsZero() && reached.Sub(t) > ClockStep:
		return fmt.Sprintf("%s before the event stored before it", human.Round(reached.Sub(t)))
	}
	return ""
}
