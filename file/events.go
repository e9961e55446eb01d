package file

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/eventorder"
)

// An event log is bounded by size as well as by age (gc's history.keep):
// one that passes maxEventsLog after an append is cut to its newest
// keepEventsLog bytes (whole lines), so that a peer that makes a circuit
// change state as fast as it can (a flapping MQTT topic) costs a bounded
// disk, and the cut is rare (once per keepEventsLog appended).
const (
	maxEventsLog  = 4 << 20
	keepEventsLog = 2 << 20
)

// appendEvents appends events to the circuit's log in one write. The caller
// has checked events/ and holds the circuit's lock, and so is the log's only
// writer: a log whose last byte is not a newline was torn or damaged, and is
// moved aside first so that the new lines do not run into it. A log that
// grows past maxEventsLog is cut (see cutEvents).
func (s *Store) appendEvents(ctx context.Context, name string, events []breaker.Event) error {
	if len(events) == 0 {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, e := range events {
		if err := enc.Encode(e); err != nil {
			return fmt.Errorf("encode event: %w", err)
		}
	}
	path := s.eventsPath(name)
	fd, err := s.openLog(ctx, path)
	if err != nil {
		return err
	}
	err = writeAll(fd, path, buf.Bytes())
	var st unix.Stat_t
	long := err == nil && unix.Fstat(fd, &st) == nil && st.Size > maxEventsLog
	if cerr := unix.Close(fd); err == nil && cerr != nil {
		err = &fs.PathError{Op: "close", Path: path, Err: cerr}
	}
	if err == nil && long {
		err = s.cutEvents(name, path)
	}
	return err
}

// cutEvents rewrites a log that passed maxEventsLog with its newest
// keepEventsLog bytes, from the first whole line in them, and says so once
// a process for each circuit. The caller holds the circuit's lock.
func (s *Store) cutEvents(name, path string) error {
	b, err := readTail(path, keepEventsLog)
	if err != nil {
		return fmt.Errorf("cut events of %s: %w", name, err)
	}
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[i+1:] // the first line, cut short
	}
	if err := s.writeAtomic(path, b); err != nil {
		return fmt.Errorf("cut events of %s: %w", name, err)
	}
	if _, told := s.told.LoadOrStore([2]string{name, "events cut"}, true); !told {
		s.logger.Warn(fmt.Sprintf("events: the log passed %d MiB; its oldest events are dropped, the newest %d MiB kept", maxEventsLog>>20, keepEventsLog>>20),
			"circuit", name, "file", path)
	}
	return nil
}

// openLog opens an event log for appending, moving aside one it cannot use
// (see setAside) or a damaged one.
func (s *Store) openLog(ctx context.Context, path string) (int, error) {
	const flags = unix.O_RDWR | unix.O_APPEND | unix.O_CREAT | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	var st unix.Stat_t
	fd, err := s.openUsable(ctx, path, flags, &st)
	if err != nil {
		return -1, err
	}
	problem, err := tornTail(fd, path, st.Size)
	if err == nil && problem == "" {
		return fd, nil
	}
	unix.Close(fd)
	if err != nil {
		return -1, err
	}
	if err := s.moveAside(path, problem, false); err != nil {
		return -1, err
	}
	return s.openUsable(ctx, path, flags, &st)
}

// tornTail says what is wrong with a log of size bytes that does not end in
// a newline, or "" when it is empty or ends well.
func tornTail(fd int, path string, size int64) (string, error) {
	if size == 0 {
		return "", nil
	}
	last := make([]byte, 1)
	if _, err := unix.Pread(fd, last, size-1); err != nil {
		return "", &fs.PathError{Op: "read", Path: path, Err: err}
	}
	switch last[0] {
	case '\n':
		return "", nil
	case 0:
		return "it ends in zero bytes (a crash before the data reached the disk?)", nil
	}
	return "its last line is cut short or not an event", nil
}

// AllEvents returns the events of every circuit with a log, at or after
// since, by time.
func (s *Store) AllEvents(ctx context.Context, since time.Time) ([]breaker.Event, error) {
	err := s.checkSubdir(eventsDir, false)
	var names []string
	if err == nil {
		names, err = named(filepath.Join(s.dir, "events"), ".jsonl")
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	var out []breaker.Event
	for _, name := range names {
		evs, err := s.Events(ctx, name, since)
		if err != nil {
			// One log fusebox can neither read nor move aside (see
			// setAside) hides that circuit's events, not everyone's.
			s.tellOnce(name, "events of a circuit left out: its log cannot be read", err)
			continue
		}
		out = append(out, evs...)
	}
	eventorder.Sort(out)
	return out, nil
}

// Events returns the circuit's events at or after since, oldest first. Lines
// that do not decode (a person's edit) are skipped.
func (s *Store) Events(ctx context.Context, name string, since time.Time) ([]breaker.Event, error) {
	var out []breaker.Event
	err := s.ScanEvents(ctx, name, since, func(e breaker.Event) bool {
		out = append(out, e)
		return true
	})
	return out, err
}

// ScanEvents calls fn with the circuit's events at or after since, oldest
// first, decoding one line at a time of the log's newest maxEventsRead
// bytes. Lines that do not decode (a person's edit) are skipped.
func (s *Store) ScanEvents(ctx context.Context, name string, since time.Time, fn func(breaker.Event) bool) error {
	if err := fusebox.ValidateName(name); err != nil {
		return fmt.Errorf("read events: %w", err)
	}
	err := s.checkSubdir(eventsDir, false)
	var b []byte
	if err == nil {
		b, err = s.readUsable(ctx, s.eventsPath(name), maxEventsRead, keepTail)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read events of %s: %w", name, err)
	}
	for line := range eventLines(b) {
		var e breaker.Event
		if len(line) > maxEventLine || json.Unmarshal(line, &e) != nil || e.Time.Before(since) {
			continue
		}
		if !fn(e) {
			break
		}
	}
	return nil
}

// eventLines are the lines of what readTail read of a log: when it read
// only the log's newest part (or a log of exactly that size: one line
// lost), the first line, cut short, is left out.
func eventLines(b []byte) iter.Seq[[]byte] {
	if len(b) == maxEventsRead {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return bytes.Lines(b)
}
