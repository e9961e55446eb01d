package fusebox

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/human"
)

// LevelNotice is the level of a circuit closing: good news, worth one line
// where a logger shows warnings, below them (journald's "notice").
const LevelNotice = slog.LevelInfo + 2

// The levels Do logs at, so that a logger at LevelNotice (the CLI's default)
// prints only what a person must hear about, once:
//   - Error: fusebox's own trouble (a state store it cannot use).
//   - Warn: a transition to open, logged by the one call that caused it (a
//     failed probe that opens it again is Info: the outage goes on).
//   - Notice: a circuit closed, by the call whose success closed it.
//   - Info: Trip's and Reset's transitions (their caller says what it did).
//   - Info: every failed attempt, wait, probe and skip.
//   - Debug: a success at the first attempt.
//
// Do never logs a call's final failure above Info: one call may be one
// endpoint of a chain that another answers. The caller that knows the call
// as a whole logs its end.
func (k *call) error(msg string, args ...any)  { k.logAt(slog.LevelError, msg, args) }
func (k *call) warn(msg string, args ...any)   { k.logAt(slog.LevelWarn, msg, args) }
func (k *call) notice(msg string, args ...any) { k.logAt(LevelNotice, msg, args) }
func (k *call) info(msg string, args ...any)   { k.logAt(slog.LevelInfo, msg, args) }
func (k *call) debug(msg string, args ...any)  { k.logAt(slog.LevelDebug, msg, args) }

// logAt checks the level first so that a quiet call allocates nothing for
// its log.
func (k *call) logAt(level slog.Level, msg string, args []any) {
	ctx := context.Background()
	if !k.c.quiet && k.c.logger.Enabled(ctx, level) {
		k.c.logger.Log(ctx, level, msg, append([]any{"circuit", k.name}, args...)...)
	}
}

// skipLevel is the level a skip is logged at.
const skipLevel = slog.LevelInfo // exit 75 says it; -v shows it

// skip counts and logs a call refused at now by an open circuit.
func (k *call) skip(ctx context.Context, err error, now time.Time) {
	if !k.c.quiet && k.c.logger.Enabled(ctx, skipLevel) { // the message is built only when it is logged
		if d := reopensIn(err); d > 0 {
			k.logAt(skipLevel, "skipped: "+err.Error(), []any{"reopens_in", d})
		} else {
			k.logAt(skipLevel, "skipped: "+err.Error(), nil)
		}
	}
	k.count(ctx, Counts{Skips: 1})
	if k.c.listeners != nil {
		k.emit(breaker.Event{Time: now, Circuit: k.name, Kind: breaker.EventSkip, Reason: err.Error()})
	}
}

func (k *call) storeFailed(err error) {
	if !k.broken {
		k.error("state store unusable; running without circuit protection", "err", err)
	}
	k.broken = true
}

// emit hands e to the listeners, if any.
func (k *call) emit(e breaker.Event) {
	if k.c.listeners != nil {
		k.c.listeners.emit(e)
	}
}

// logEvents logs the transitions among events and hands every event to the
// listeners. It runs after the store's lock is released.
func (k *call) logEvents(events []breaker.Event) {
	for _, e := range events {
		if e.Kind == breaker.EventTransition { // logged first: what a listener logs comes after
			k.logTransition(e)
		}
		k.emit(e)
	}
}

// logTransition logs a transition at the level the logging contract gives
// it: an opening warns, a closing is a notice, a failed probe's reopening
// and a trip or reset by hand (whose command says what it did) are info.
func (k *call) logTransition(e breaker.Event) {
	if k.byHand {
		k.info("circuit "+strings.ReplaceAll(string(e.To), "_", " "), "reason", e.Reason)
		return
	}
	switch e.To {
	case breaker.Open:
		if e.From == breaker.HalfOpen { // a failed probe: the opening was told already
			k.info("circuit reopened", "for", human.Round(time.Duration(e.For)), "reason", e.Reason)
		} else {
			k.warn("circuit opened", "for", human.Round(time.Duration(e.For)), "reason", e.Reason)
		}
	case breaker.Closed:
		k.notice("circuit closed", "reason", e.Reason)
	}
}
