package file

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
)

// Load returns the circuit's state from DIR/NAME.json without a lock: one
// open, read and close, as every fail-fast call makes it. A file that is
// damaged or a symlink is moved aside under the lock, and the circuit starts
// afresh.
func (s *Store) Load(ctx context.Context, name string) (breaker.State, error) {
	if err := fusebox.ValidateName(name); err != nil {
		return breaker.State{}, fmt.Errorf("load: %w", err)
	}
	st, err := s.readState(name)
	if err == nil {
		return st, nil
	}
	if d := (*damage)(nil); !errors.As(err, &d) { // d is made here, only on an error
		return breaker.State{}, fmt.Errorf("load %s: %w", name, err)
	}
	unlock, err := s.lock(ctx, name)
	if err != nil {
		return breaker.State{}, err
	}
	defer unlock()
	if st, err = s.readLocked(name); err != nil {
		return breaker.State{}, fmt.Errorf("load %s: %w", name, err)
	}
	return st, nil
}

// Names lists the circuits with a state or a counts file, sorted: a
// circuit that has only ever succeeded has no state file.
func (s *Store) Names(context.Context) ([]string, error) {
	return s.names(s.checkSubdir(countsDir, false) == nil)
}

// names lists the circuits with a state file and those with
// a counters file (withCounts), sorted.
func (s *Store) names(withCounts bool) ([]string, error) {
	names, err := named(s.dir, ".json")
	if err != nil {
		return nil, fmt.Errorf("list circuits: %w", err)
	}
	if withCounts {
		counted, err := named(filepath.Join(s.dir, ".counts"), ".counts")
		if err != nil {
			return nil, fmt.Errorf("list circuits: %w", err)
		}
		names = append(names, counted...)
		slices.Sort(names)
		names = slices.Compact(names)
	}
	return names, nil
}

// Update applies fn to the circuit's state under its lock. When fn reports a
// change it replaces DIR/NAME.json and appends fn's events to the log. After
// a write, at most once an hour, it runs GC with the configured retention.
func (s *Store) Update(ctx context.Context, name string, fn func(*breaker.State) ([]breaker.Event, bool)) (breaker.State, error) {
	if err := fusebox.ValidateName(name); err != nil {
		return breaker.State{}, fmt.Errorf("update: %w", err)
	}
	st, changed, err := s.update(ctx, name, fn)
	if err != nil {
		return breaker.State{}, err
	}
	if changed {
		s.maybeGC(ctx)
	}
	return st, nil
}

// update is Update under the lock; it reports whether it wrote.
func (s *Store) update(ctx context.Context, name string, fn func(*breaker.State) ([]breaker.Event, bool)) (breaker.State, bool, error) {
	unlock, err := s.lock(ctx, name)
	if err != nil {
		return breaker.State{}, false, err
	}
	defer unlock()
	st, err := s.readLocked(name)
	if err != nil {
		return breaker.State{}, false, fmt.Errorf("update %s: %w", name, err)
	}
	events, changed := fn(&st)
	if !changed {
		return st, false, nil
	}
	st.Name = name
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return breaker.State{}, false, fmt.Errorf("update %s: encode state: %w", name, err)
	}
	if len(events) > 0 {
		// Before the state is written, so that a refused log changes nothing.
		if err := s.checkSubdir(eventsDir, true); err != nil {
			return breaker.State{}, false, fmt.Errorf("update %s: append events: %w", name, err)
		}
	}
	if err := s.writeAtomic(s.statePath(name), append(b, '\n')); err != nil {
		return breaker.State{}, false, fmt.Errorf("update %s: write state: %w", name, err)
	}
	if err := s.appendEvents(ctx, name, events); err != nil {
		return breaker.State{}, false, fmt.Errorf("update %s: append events: %w", name, err)
	}
	return st, true, nil
}

// readLocked reads the circuit's state under its lock, where no one else
// writes it: damage seen now is real, and the file is moved aside.
func (s *Store) readLocked(name string) (breaker.State, error) {
	st, err := s.readState(name)
	if err == nil {
		return st, nil
	}
	var d *damage // made here, only on an error
	if !errors.As(err, &d) {
		return st, err
	}
	if err := s.moveAside(s.statePath(name), d.problem, d.unusable); err != nil {
		return breaker.State{}, err
	}
	return breaker.State{Name: name}, nil
}

// damage is a file that holds no usable record: damaged (a crash, an edit),
// or unusable (see setAside).
type damage struct {
	problem  string
	unusable bool
}

func (d *damage) Error() string { return d.problem }

// readState reads the circuit's state file, or returns the State cached
// from it when one lstat finds it unchanged (see stateCache). A missing file
// is a fresh state; an unparsable file or a symlink is a *damage.
func (s *Store) readState(name string) (breaker.State, error) {
	var lst unix.Stat_t
	path := s.statePath(name)
	lerr := unix.Lstat(path, &lst)
	switch lerr {
	case nil:
		if st, ok := s.states.lookup(name, &lst); ok {
			return st, nil
		}
	case unix.ENOENT:
		s.states.drop(name)
		return breaker.State{Name: name}, nil
	}
	fd, err := openFile(path, readFlags)
	if errors.Is(err, fs.ErrPermission) && lerr == nil { // another user's file, or FIFO
		if lst.Mode&unix.S_IFMT != unix.S_IFREG {
			return breaker.State{}, &damage{notRegular(uint32(lst.Mode)), true}
		}
		return breaker.State{}, &damage{s.forbidden(&lst), true}
	}
	if err != nil {
		return stateOf(nil, err, name)
	}
	var fst unix.Stat_t
	b, err := readOpen(fd, path, maxStateSize, refuseLonger, &fst)
	st, err := stateOf(b, err, name)
	if err != nil {
		unix.Close(fd)
		return st, err
	}
	s.states.put(name, fd, &fst, st)
	return st, nil
}

// readStateFile reads the state file at path, uncached.
func readStateFile(path, name string) (breaker.State, error) {
	b, err := readFile(path, maxStateSize)
	return stateOf(b, err, name)
}

// stateOf decodes the content b of a state file, read with err.
func stateOf(b []byte, err error, name string) (breaker.State, error) {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return breaker.State{Name: name}, nil
	case symlinkRefused(err):
		return breaker.State{}, &damage{"it is a symlink", true}
	case refused(err) != "":
		return breaker.State{}, &damage{refused(err), true}
	case err != nil:
		return breaker.State{}, err
	}
	var st breaker.State
	if err := json.Unmarshal(b, &st); err != nil {
		return breaker.State{}, &damage{describe(b, err), false}
	}
	st.Name = name
	return st, nil
}

// refused says why readFile refused a file without reading it, or "".
func refused(err error) string {
	var tl *tooLarge
	switch {
	case errors.Is(err, errNotRegular):
		return "it is not a regular file"
	case errors.As(err, &tl):
		return fmt.Sprintf("it holds %d bytes, more than the %d a record may", tl.size, tl.limit)
	}
	return ""
}

// describe says what is wrong with a record that did not decode.
func describe(b []byte, err error) string {
	switch {
	case len(b) == 0:
		return "it is empty"
	case len(bytes.TrimLeft(b, "\x00")) == 0:
		return fmt.Sprintf("it holds %d zero bytes (a crash before the data reached the disk?)", len(b))
	}
	return "it is not a valid record: " + err.Error()
}
