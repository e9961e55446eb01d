package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
)

// Peek reads the circuit's state and counters as Load and Counts do, but
// changes nothing: a damaged state file or an unusable counters file (ones
// Load and Counts would move aside) is reported as an error wrapping
// fusebox.ErrDamaged that names the file and its problem, with the fresh
// state or zero counts they would then start from.
func (s *Store) Peek(_ context.Context, name string) (breaker.State, fusebox.Counts, error) {
	if err := fusebox.ValidateName(name); err != nil {
		return breaker.State{}, fusebox.Counts{}, fmt.Errorf("load: %w", err)
	}
	st, err := s.readState(name)
	if d := (*damage)(nil); errors.As(err, &d) {
		st, err = breaker.State{Name: name}, fmt.Errorf("%s is %w (%s)", s.statePath(name), fusebox.ErrDamaged, d.problem)
	} else if err != nil {
		st, err = breaker.State{}, fmt.Errorf("load %s: %w", name, err)
	}
	c, cerr := s.peekCounts(name)
	return st, c, errors.Join(err, cerr)
}

// peekCounts reads the counters file as Counts does, repairing nothing: not
// the counters subdirectory of a shared dir, not a file it cannot use.
func (s *Store) peekCounts(name string) (fusebox.Counts, error) {
	dir := filepath.Join(s.dir, subdirNames[countsDir])
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fusebox.Counts{}, nil
	}
	if err == nil {
		err = s.refuseSubdir(dir, fi)
	}
	if err != nil {
		return fusebox.Counts{}, fmt.Errorf("read counts of %s: %w", name, err)
	}
	path := s.countsPath(name)
	b, err := readAt(path, countsSize, keepHead)
	if errors.Is(err, fs.ErrNotExist) {
		return fusebox.Counts{}, nil
	}
	if err != nil {
		if problem, _, _ := s.unusable(path, err); problem != "" {
			return fusebox.Counts{}, fmt.Errorf("%s is %w (%s)", path, fusebox.ErrDamaged, problem)
		}
		return fusebox.Counts{}, fmt.Errorf("read counts of %s: %w", name, err)
	}
	return decodeCounts(b), nil
}

// PeekNames lists the circuits as Names does, without first repairing the
// counters subdirectory of a shared dir: one Names would repair is left
// out, with the circuits only it names.
func (s *Store) PeekNames(context.Context) ([]string, error) {
	dir := filepath.Join(s.dir, subdirNames[countsDir])
	fi, err := os.Lstat(dir)
	return s.names(err == nil && s.refuseSubdir(dir, fi) == nil)
}
