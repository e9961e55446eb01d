// Package bounds holds the bounds on the records a fusebox.Store reads
// back, which the stores that read untrusted bytes (file, redis) share.
package bounds

import "unicode/utf8"

// Bounds on the records a Store reads back. Whatever wrote them (another
// process, another host through a shared Redis, a person with an editor) is
// as untrusted as any peer: a record past its bound is damage, set aside
// unread or skipped, and costs one log line rather than memory. Every store
// applies the same numbers.
const (
	MaxStateSize  = 1 << 20  // a circuit's stored state; a state is a few hundred bytes
	MaxAnswerSize = 64 << 20 // a stored answer, its body base64-encoded in JSON
	MaxEventSize  = 64 << 10 // one stored event; a longer one is skipped undecoded
	MaxEventsRead = 16 << 20 // of a circuit's event log, at most the newest this much is read
	MaxReason     = 200      // bytes of an event's reason a store hands back
)

// ClipReason returns reason cut to at most MaxReason bytes, at a character
// boundary and ending in "…" when it was cut.
func ClipReason(reason string) string {
	if len(reason) <= MaxReason {
		return reason
	}
	cut := MaxReason - len("…")
	for cut > 0 && !utf8.RuneStart(reason[cut]) {
		cut--
	}
	return reason[:cut] + "…"
}
