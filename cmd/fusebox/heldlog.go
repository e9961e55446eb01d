package main

import (
	"context"
	"log/slog"
	"sync"

	"github.com/fusebox-hq/fusebox"
)

// maxHeld bounds the lines a call holds: a few per endpoint (an opening, a
// closing). Past it, lines pass through as they come.
const maxHeld = 64

// heldLog holds the lines a call's circuits log about their transitions
// (WARN "circuit opened", NOTICE "circuit closed") until the call's outcome
// says whether they are news, as run holds a command's stderr: an endpoint
// that opened behind a chain its fallback answered is in the event log,
// status and notifications, not on the answered call's stderr. What is
// below NOTICE is not printed by default anyway, and fusebox's own trouble
// (ERROR) passes at once. Safe for concurrent use: a hedged chain logs from
// a goroutine per endpoint.
type heldLog struct {
	mu   sync.Mutex
	recs []heldRecord
	done bool // released: lines pass through
}

type heldRecord struct {
	h slog.Handler
	r slog.Record
}

// holdTransitions returns a logger that holds l's transition lines in held.
func holdTransitions(l *slog.Logger) (*slog.Logger, *heldLog) {
	held := &heldLog{}
	return slog.New(&holdHandler{inner: l.Handler(), held: held}), held
}

// release prints the held lines, in order, when print is set, and drops
// them otherwise; lines logged after it pass through.
func (h *heldLog) release(print bool) {
	h.mu.Lock()
	recs := h.recs
	h.recs, h.done = nil, true
	h.mu.Unlock()
	if !print {
		return
	}
	for _, hr := range recs {
		hr.h.Handle(context.Background(), hr.r)
	}
}

// hold keeps r for release; false when it must pass now.
func (h *heldLog) hold(inner slog.Handler, r slog.Record) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done || len(h.recs) == maxHeld {
		return false
	}
	h.recs = append(h.recs, heldRecord{h: inner, r: r.Clone()})
	return true
}

type holdHandler struct {
	inner slog.Handler
	held  *heldLog
}

func (x *holdHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return x.inner.Enabled(ctx, l)
}

func (x *holdHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= fusebox.LevelNotice && r.Level < slog.LevelError && x.held.hold(x.inner, r) {
		return nil
	}
	return x.inner.Handle(ctx, r)
}

func (x *holdHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &holdHandler{inner: x.inner.WithAttrs(attrs), held: x.held}
}

func (x *holdHandler) WithGroup(name string) slog.Handler {
	return &holdHandler{inner: x.inner.WithGroup(name), held: x.held}
}
