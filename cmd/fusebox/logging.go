package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/fusebox-hq/fusebox/redact"
)

// logOptions are the global flags that shape stderr logging.
type logOptions struct {
	format  string // text | json
	quiet   bool   // warnings and errors only
	verbose bool   // debug too
}

func (o logOptions) validate() error {
	if o.format != "text" && o.format != "json" {
		return usageErrorf("--log-format: want text or json, got %q", o.format)
	}
	return nil
}

// newLogger returns the stderr logger: one line per record, secrets
// redacted by r (nil: not redacted, for lines that cannot hold one). Under systemd, when stderr is the journal stream, lines carry the
// <N> priority prefix journald reads instead of a timestamp of their own.
func newLogger(w io.Writer, o logOptions, r *redact.Redactor, journal bool) *slog.Logger {
	level := slog.LevelInfo
	switch {
	case o.quiet:
		level = slog.LevelWarn
	case o.verbose:
		level = slog.LevelDebug
	}
	opts := &slog.HandlerOptions{Level: level}
	if journal {
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey) {
				return slog.Attr{}
			}
			return a
		}
		pw := &priorityWriter{w: w}
		var h slog.Handler = slog.NewTextHandler(pw, opts)
		if o.format == "json" {
			h = slog.NewJSONHandler(pw, opts)
		}
		return slog.New(redacting(r, &priorityHandler{Handler: h, w: pw}))
	}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if o.format == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(redacting(r, h))
}

func redacting(r *redact.Redactor, h slog.Handler) slog.Handler {
	if r == nil {
		return h
	}
	return r.Handler(h)
}

// journalStream reports whether stderr is the stream systemd named in
// $JOURNAL_STREAM ("DEVICE:INODE").
func journalStream(getenv func(string) string, stderr *os.File) bool {
	js := getenv("JOURNAL_STREAM")
	if js == "" || stderr == nil {
		return false
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(stderr.Fd()), &st); err != nil {
		return false
	}
	return js == fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}

// priorityHandler sets the sd-daemon priority prefix of the line its inner
// handler is about to write.
type priorityHandler struct {
	slog.Handler
	w *priorityWriter
}

func (h *priorityHandler) Handle(ctx context.Context, r slog.Record) error {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	switch {
	case r.Level >= slog.LevelError:
		h.w.prefix = "<3>"
	case r.Level >= slog.LevelWarn:
		h.w.prefix = "<4>"
	case r.Level >= slog.LevelInfo:
		h.w.prefix = "<6>"
	default:
		h.w.prefix = "<7>"
	}
	return h.Handler.Handle(ctx, r)
}

func (h *priorityHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &priorityHandler{Handler: h.Handler.WithAttrs(as), w: h.w}
}

func (h *priorityHandler) WithGroup(name string) slog.Handler {
	return &priorityHandler{Handler: h.Handler.WithGroup(name), w: h.w}
}

type priorityWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
}

func (p *priorityWriter) Write(b []byte) (int, error) {
	_, err := io.WriteString(p.w, p.prefix+strings.TrimLeft(string(b), " "))
	return len(b), err
}
