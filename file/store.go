// Package file is fusebox's default Store: plain files in one directory,
// shared by every process on the host that uses it. A person can ls and cat
// it:
//
//	DIR/NAME.json              the circuit's State, indented JSON
//	DIR/events/NAME.jsonl      its events, one JSON object a line, oldest first
//	DIR/answers/KEY.json       the last good answer of an endpoint or chain
//	DIR/.counts/NAME.counts    its successes, failures, skips and last success (binary; fusebox status shows them)
//	DIR/.counts/NAME.budget    its retry budget's attempts in the window, when it has a retry_budget (binary; see budget.go)
//	DIR/.locks/NAME.lock       the flock serialising the circuit's updates
//	DIR/.gc                    its mtime is when the last automatic GC ran
//
// Every file name is a valid name (fusebox.ValidateName) plus a suffix, so no
// name can reach outside DIR. Files are replaced by renaming a temporary file
// over them, so a reader without the lock never sees a torn one; a file that
// is damaged anyway (a crash without fsync, a person's edit) is renamed
// aside to FILE.corrupt-TIME with one warning, and one the Store cannot use
// (a symlink, a FIFO, another user's it may not open, an oversized one: see
// aside.go) with one error. A subdirectory replaced by a symlink is
// refused, never followed; in a shared dir it is moved aside too, as is any
// subdirectory the group's members cannot all use (see subdirs.go).
package file

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/internal/retention"
)

var (
	_ fusebox.Admin = (*Store)(nil)
	_ answers.Store = (*Store)(nil)
)

// Store keeps circuit state in files under one directory. It is safe for
// concurrent use by goroutines and by processes.
type Store struct {
	dir         string
	prefix      string // dir, clean, with a trailing separator: the hot paths' start
	euid        int
	fsync       bool
	logger      *slog.Logger
	gcAfter     time.Duration
	eventsFor   time.Duration
	lockTimeout time.Duration
	now         func() time.Time
	gates       gates
	subdirOK    [numSubdirs]atomic.Bool // checked and found safe; see subdir
	gcLooked    atomic.Int64            // when maybeGC last looked at DIR/.gc, Unix ns
	maps        countMaps               // counters files kept mapped; see withCounts
	states      stateCache              // states last read or written; see stateCache
	shared      bool                    // the dir is shared by a group: see shared.go
	gid         int                     // the dir's group
	told        sync.Map                // the errors tellOnce has logged
}

// Option configures a Store.
type Option func(*Store)

// WithFsync sets whether writes are flushed to disk before they count (default
// true): the temporary file before it is renamed into place, and the
// directory after. Without it a crash can leave a zero-filled state file,
// which is then moved aside and the circuit starts afresh.
func WithFsync(on bool) Option { return func(s *Store) { s.fsync = on } }

// WithLogger sets where warnings go, such as a damaged file moved aside
// (default: nowhere).
func WithLogger(l *slog.Logger) Option { return func(s *Store) { s.logger = l } }

// WithRetention sets the automatic GC, run at most hourly after an Update:
// circuits and answers unused for gcAfter and events older than eventsFor are
// removed (defaults 7 and 30 days, internal/retention;
// a duration that is not positive keeps its default).
func WithRetention(gcAfter, eventsFor time.Duration) Option {
	return func(s *Store) {
		if gcAfter > 0 {
			s.gcAfter = gcAfter
		}
		if eventsFor > 0 {
			s.eventsFor = eventsFor
		}
	}
}

// WithLockTimeout sets how long Update waits for a circuit's lock (default 5s;
// a d that is not positive keeps it).
func WithLockTimeout(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.lockTimeout = d
		}
	}
}

// WithNow sets the clock used to name damaged files and to schedule the
// automatic GC (default time.Now).
func WithNow(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// Open returns the Store in dir, creating dir (mode 0700) when it is missing.
// It is cheap: one stat, and a mkdir only when needed.
//
// Open refuses, with an *UnsafeDirError, a dir another user could use to
// plant state or symlinks: one owned by neither the caller nor root, or one
// every user may write to, with the sticky bit or without. Any other error
// means the dir cannot be used (read-only, not a directory, no permission).
// The subdirectories are checked later, each before its first use: one that
// is a symlink is refused the same way.
func Open(dir string, opts ...Option) (*Store, error) {
	s := &Store{
		dir:         dir,
		euid:        os.Geteuid(),
		fsync:       true,
		logger:      slog.New(slog.DiscardHandler),
		gcAfter:     retention.GCAfter,
		eventsFor:   retention.Events,
		lockTimeout: 5 * time.Second,
		now:         time.Now,
	}
	for _, o := range opts {
		o(s)
	}
	if dir == "" {
		return nil, errors.New("open state dir: no dir given")
	}
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create state dir: %w", err)
		}
		fi, err = os.Stat(dir)
	}
	if err != nil {
		return nil, fmt.Errorf("open state dir: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("open state dir: %s is not a directory", dir)
	}
	if err := checkDir(dir, fi, s.euid); err != nil {
		return nil, err
	}
	s.shared = isShared(fi)
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.gid = int(st.Gid)
	}
	s.prefix = filepath.Clean(dir)
	if !strings.HasSuffix(s.prefix, "/") {
		s.prefix += "/"
	}
	return s, nil
}

// Close releases the counters files the Store keeps mapped and the state
// files it keeps open. The Store may still be used afterwards: it opens and
// maps them again as needed.
func (s *Store) Close() error {
	s.unmapAll()
	s.states.dropAll()
	return nil
}

// UnsafeDirError is returned by Open for a state dir that another user could
// write to, and by any method for a subdirectory of it that another user
// could write to or that is a symlink.
type UnsafeDirError struct {
	Dir   string
	Owner int         // the dir's owner
	Euid  int         // the caller's effective uid
	Mode  fs.FileMode // the dir's mode (the link's, for a symlink)
}

func (e *UnsafeDirError) Error() string {
	switch {
	case e.Mode&fs.ModeSymlink != 0:
		return fmt.Sprintf("state dir entry %s is a symlink: refusing to follow it; remove it and fusebox recreates it as a directory", e.Dir)
	case e.foreign():
		return fmt.Sprintf("state dir %s is owned by uid %d, not by you (uid %d): refusing it; use a dir you own (--state DIR), or share it with a group of yours (fusebox state init --group GROUP DIR)", e.Dir, e.Owner, e.Euid)
	case e.Mode&fs.ModeSticky != 0:
		return fmt.Sprintf("state dir %s is writable by every user (mode %s), and the sticky bit still lets anyone plant files in it: refusing it; run chmod o-w on it or use a dir you own (--state DIR)", e.Dir, e.Mode)
	}
	return fmt.Sprintf("state dir %s is writable by every user (mode %s) without the sticky bit: refusing it; run chmod o-w on it or use a dir you own (--state DIR)", e.Dir, e.Mode)
}

// checkDir refuses a dir another user could create entries in: one owned by
// another user than the caller or root, unless it is shared with a group of
// the caller's (root may write any group's: it shares every shared dir),
// or one everyone may write to. The
// sticky bit does not help: it stops others removing or renaming our
// entries, not planting their own, such as a symlink in place of a
// subdirectory not made yet. It refuses a symlink too (fi from lstat).
func checkDir(dir string, fi fs.FileInfo, euid int) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	e := &UnsafeDirError{Dir: dir, Owner: int(st.Uid), Euid: euid, Mode: fi.Mode()}
	if e.Mode&fs.ModeSymlink != 0 || e.Mode.Perm()&0o002 != 0 {
		return e
	}
	if e.foreign() && !(isShared(fi) && (euid == 0 || inGroup(int(st.Gid)))) {
		return e
	}
	return nil
}

// foreign reports whether the dir belongs to another user than the caller or
// root.
func (e *UnsafeDirError) foreign() bool { return e.Owner != e.Euid && e.Owner != 0 }

// The paths of a circuit's files, for a name that passed
// fusebox.ValidateName (which a join would not change: the hot ones are
// concatenated). A path in a subdirectory is used only after
// checkSubdir passed.
func (s *Store) statePath(name string) string  { return s.prefix + name + ".json" }
func (s *Store) eventsPath(name string) string { return filepath.Join(s.dir, "events", name+".jsonl") }
func (s *Store) answerPath(key string) string  { return filepath.Join(s.dir, "answers", key+".json") }
func (s *Store) countsPath(name string) string {
	return s.prefix + ".counts/" + name + ".counts"
}
func (s *Store) answerLockPath(key string) string {
	return filepath.Join(s.dir, "answers", key+".lock")
}
func (s *Store) lockPath(name string) string { return filepath.Join(s.dir, ".locks", name+".lock") }
