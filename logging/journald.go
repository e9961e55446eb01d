package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/fusebox-hq/fusebox"
)

// JournalStream reports whether stderr is the stream systemd named in
// $JOURNAL_STREAM ("DEVICE:INODE"), read through getenv. A nil stderr (a
// test's, say) is not.
func JournalStream(getenv func(string) string, stderr *os.File) bool {
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
	case r.Level >= fusebox.LevelNotice:
		h.w.prefix = "<5>"
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

// priorityWriter writes each line with the prefix its handler chose; the
// handler holds mu from that choice to the write. journald reads the prefix
// only at the very start of a line, so leading spaces go.
type priorityWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
}

func (p *priorityWriter) Write(b []byte) (int, error) {
	_, err := io.WriteString(p.w, p.prefix+strings.TrimLeft(string(b), " "))
	return len(b), err
}
