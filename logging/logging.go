// Package logging makes fusebox's stderr logger: one line per record, as
// text or JSON, at the level the quiet and verbose flags choose, with secrets
// redacted. Under systemd, when stderr is the journal's stream, each line
// starts with the <N> priority prefix journald reads, and carries neither a
// timestamp nor a level of its own: the journal records both.
package logging

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/redact"
)

// Options shape the logger: the --log-format, --quiet and --verbose flags.
type Options struct {
	Format  string // "text" or "json"
	Quiet   bool   // fusebox's own trouble only (errors); it wins over Verbose
	Verbose bool   // every attempt, wait and skip: down to debug
}

// Validate reports a Format that is neither text nor json. The message says
// what was wanted and what came, for the caller to prefix with where Format
// came from (a flag, a config key).
func (o Options) Validate() error {
	if o.Format != "text" && o.Format != "json" {
		return fmt.Errorf("want text or json, got %q", o.Format)
	}
	return nil
}

// The levels New prints: by default fusebox.LevelNotice and above (what a
// person must hear about: a final failure, a circuit opening or closing,
// fusebox's own trouble), which keeps cron quiet while things work; Quiet
// only errors (fusebox's own trouble); Verbose everything. See the table of
// docs/run.md, "Logging".
//
// New returns a logger writing one line per record to w, secrets redacted by
// r (nil: not redacted, for lines that cannot hold one). journal says w is
// the journal's stream (see JournalStream): lines then carry the <N>
// priority prefix instead of a timestamp and a level. A Format other than
// json is text. The logger is safe for concurrent use when w is.
func New(w io.Writer, o Options, r *redact.Redactor, journal bool) *slog.Logger {
	level := fusebox.LevelNotice
	switch {
	case o.Quiet:
		level = slog.LevelError
	case o.Verbose:
		level = slog.LevelDebug
	}
	isJSON := o.Format == "json"
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if journal && len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey) {
			return slog.Attr{}
		}
		if isJSON && a.Value.Kind() == slog.KindDuration {
			// Seconds, a number a script can compare ("wait":0.093), not
			// nanoseconds.
			return slog.Float64(a.Key, a.Value.Duration().Seconds())
		}
		return nameLevels(groups, a)
	}}
	if journal {
		pw := &priorityWriter{w: w}
		return slog.New(redacting(r, &priorityHandler{Handler: handler(pw, o, opts), w: pw}))
	}
	return slog.New(redacting(r, handler(w, o, opts)))
}

// nameLevels writes fusebox.LevelNotice as NOTICE, not INFO+2.
func nameLevels(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.LevelKey {
		if l, ok := a.Value.Any().(slog.Level); ok && l == fusebox.LevelNotice {
			return slog.String(slog.LevelKey, "NOTICE")
		}
	}
	return a
}

func handler(w io.Writer, o Options, opts *slog.HandlerOptions) slog.Handler {
	if o.Format == "json" {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}

func redacting(r *redact.Redactor, h slog.Handler) slog.Handler {
	if r == nil {
		return h
	}
	return r.Handler(h)
}
