package file

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
)

const (
	// gcEvery spaces automatic GCs: one Update an hour pays for a scan.
	gcEvery = time.Hour
	// tempMaxAge is older than any write in progress: a temporary file this
	// old was left by a killed process.
	tempMaxAge = time.Minute
)

// maybeGC runs GC with the configured retention when the last run, recorded
// as the mtime of DIR/.gc, is gcEvery old. Two processes may both run it:
// GC is safe to repeat. Failures are logged, not returned; the Update that
// triggered it has already succeeded.
func (s *Store) maybeGC(ctx context.Context) {
	now := s.now()
	// A long-lived Store (a daemon) looks at the mark at most once every
	// gcEvery; a short-lived process looks once.
	if last := s.gcLooked.Load(); last != 0 && now.Sub(time.Unix(0, last)) < gcEvery {
		return
	}
	s.gcLooked.Store(now.UnixNano())
	mark := filepath.Join(s.dir, ".gc")
	if fi, err := os.Lstat(mark); err == nil {
		if age := now.Sub(fi.ModTime()); age >= 0 && age < gcEvery {
			return
		}
	}
	if err := s.touch(mark, now); err != nil {
		s.logger.Warn("automatic gc skipped", "err", err)
		return
	}
	r, err := s.GC(ctx, now, s.gcAfter, s.eventsFor)
	if err != nil {
		s.logger.Warn("automatic gc failed", "err", err)
	}
	if len(r.Circuits)+len(r.Answers)+r.Events > 0 {
		s.logger.Info("automatic gc removed unused state", "circuits", r.Circuits, "answers", r.Answers, "events", r.Events)
	}
}

// touch creates path if needed and sets its mtime to t.
func (s *Store) touch(path string, t time.Time) error {
	fd, err := s.openCreate(path, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC)
	if err != nil {
		return err
	}
	unix.Close(fd)
	ts := unix.NsecToTimespec(t.UnixNano())
	err = unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW)
	if err == unix.EPERM {
		// Another member's file in a shared dir: only its owner may set a
		// time, anyone who may write it may set "now".
		now := unix.Timespec{Nsec: utimeNow}
		err = unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{now, now}, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err != nil {
		return &fs.PathError{Op: "utimes", Path: path, Err: err}
	}
	return nil
}

// GC removes, as of now:
//   - circuits whose state and counts were both last written, and whose
//     last success was, more than unusedFor ago: all their files, under
//     their lock;
//   - answers written more than unusedFor ago;
//   - event lines older than eventsFor;
//   - temporary files older than a minute, left by killed processes, and
//     damaged files moved aside more than unusedFor ago.
//
// It carries on past a failure and returns every failure joined. A
// subdirectory that checkSubdir refuses, such as a symlink planted in its
// place, is left alone with a warning, and so are the circuits with files in
// it: GC never removes a file through it.
func (s *Store) GC(ctx context.Context, now time.Time, unusedFor, eventsFor time.Duration) (fusebox.GCReport, error) {
	var r fusebox.GCReport
	var errs []error
	var err error
	old := now.Add(-unusedFor)
	safe := s.gcSubdirs()
	if safe[locksDir] && safe[countsDir] && safe[eventsDir] {
		r.Circuits, err = s.gcCircuits(ctx, now, old)
		errs = append(errs, err)
	}
	if safe[answersDir] {
		r.Answers, err = s.gcAnswers(old)
		errs = append(errs, err)
	}
	if safe[locksDir] && safe[eventsDir] {
		r.Events, err = s.gcEvents(ctx, now.Add(-eventsFor))
		errs = append(errs, err)
	}
	errs = append(errs, sweepLeftovers(s.dir, now.Add(-tempMaxAge), old))
	for _, d := range []subdir{answersDir, eventsDir, countsDir, locksDir} {
		if safe[d] {
			errs = append(errs, sweepLeftovers(filepath.Join(s.dir, subdirNames[d]), now.Add(-tempMaxAge), old))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return r, fmt.Errorf("gc: %w", err)
	}
	return r, nil
}

// gcSubdirs reports which subdirectories GC may walk: those checkSubdir
// passes, and those missing, which hold nothing. It warns about the others.
func (s *Store) gcSubdirs() (safe [numSubdirs]bool) {
	for d := range numSubdirs {
		err := s.checkSubdir(d, false)
		safe[d] = err == nil || errors.Is(err, fs.ErrNotExist)
		if !safe[d] {
			s.logger.Warn("gc left a state subdirectory alone, and the circuits with files in it", "dir", filepath.Join(s.dir, subdirNames[d]), "err", err)
		}
	}
	return safe
}

// gcCircuits removes the circuits unused since old (and not tripped at now) and returns those that had
// a state file. Candidates are every name with a state, counts or lock file,
// so a circuit that never stored a state leaves nothing behind either.
func (s *Store) gcCircuits(ctx context.Context, now, old time.Time) ([]string, error) {
	var names []string
	for dir, suffix := range map[string]string{s.dir: ".json", filepath.Join(s.dir, ".counts"): ".counts", filepath.Join(s.dir, ".locks"): ".lock"} {
		found, err := records(dir, suffix)
		if err != nil {
			return nil, err
		}
		names = append(names, found...)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	var removed []string
	var errs []error
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		if unused, err := s.unused(ctx, name, old); err != nil || !unused {
			errs = append(errs, err)
			continue
		}
		had, err := s.removeCircuit(ctx, name, now, old)
		if had {
			removed = append(removed, name)
		}
		errs = append(errs, err)
	}
	return removed, errors.Join(errs...)
}

// unused reports whether neither the circuit's state nor its counts were
// written since old, and its last success was before old. (The counts
// file's mtime is not enough: writes through a shared mapping do not update
// it on every filesystem.)
func (s *Store) unused(ctx context.Context, name string, old time.Time) (bool, error) {
	for _, path := range []string{s.statePath(name), s.countsPath(name)} {
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return false, err
		}
		if !fi.ModTime().Before(old) {
			return false, nil
		}
	}
	c, err := s.Counts(ctx, name)
	if err != nil {
		return false, err
	}
	return !c.LastSuccess.After(old), nil
}

// removeCircuit removes the circuit's files under its lock, when it is still
// unused and no trip by hand is in force at now, and reports whether it had a state file. The lock file goes last,
// while still held: lock notices that and takes a fresh one.
func (s *Store) removeCircuit(ctx context.Context, name string, now, old time.Time) (bool, error) {
	unlock, err := s.lock(ctx, name)
	if err != nil {
		return false, err
	}
	defer unlock()
	if unused, err := s.unused(ctx, name, old); err != nil || !unused {
		return false, err
	}
	if st, err := readStateFile(s.statePath(name), name); err == nil && st.TripInForce(now) {
		return false, nil
	}
	err = os.Remove(s.statePath(name))
	s.states.drop(name) // its file need not be held open any longer
	had := err == nil
	errs := []error{ignoreMissing(err)}
	for _, path := range []string{s.eventsPath(name), s.countsPath(name), s.budgetPath(name), s.lockPath(name)} {
		errs = append(errs, ignoreMissing(os.Remove(path)))
	}
	return had, errors.Join(errs...)
}

func ignoreMissing(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// gcAnswers removes the answers written before old.
func (s *Store) gcAnswers(old time.Time) ([]string, error) {
	keys, err := records(filepath.Join(s.dir, "answers"), ".json")
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, key := range keys {
		fi, err := os.Lstat(s.answerPath(key))
		if err == nil && fi.ModTime().Before(old) {
			err = os.Remove(s.answerPath(key))
			if err == nil {
				removed = append(removed, key)
				// Its Exclusive lock goes too; a holder notices the unlink.
				err = os.Remove(s.answerLockPath(key))
			}
		}
		errs = append(errs, ignoreMissing(err))
	}
	return removed, errors.Join(errs...)
}

// gcEvents drops the event lines older than cutoff and returns how many it
// dropped. A log is rewritten, under its circuit's lock, only when its first
// line is old: lines are appended in time order.
func (s *Store) gcEvents(ctx context.Context, cutoff time.Time) (int, error) {
	names, err := records(filepath.Join(s.dir, "events"), ".jsonl")
	if err != nil {
		return 0, err
	}
	dropped := 0
	var errs []error
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return dropped, err
		}
		fresh, err := startsAfter(s.eventsPath(name), cutoff)
		if err != nil || fresh {
			errs = append(errs, err)
			continue
		}
		n, err := s.trimEvents(ctx, name, cutoff)
		dropped += n
		errs = append(errs, err)
	}
	return dropped, errors.Join(errs...)
}

// startsAfter reports whether the log's first line is an event at or after
// cutoff, reading only its first few kilobytes.
func startsAfter(path string, cutoff time.Time) (bool, error) {
	fd, err := openFile(path, readFlags)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	buf := make([]byte, 4096)
	n, err := unix.Read(fd, buf)
	if err != nil {
		return false, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	line, _, _ := bytes.Cut(buf[:n], []byte{'\n'})
	var e breaker.Event
	return json.Unmarshal(line, &e) == nil && !e.Time.Before(cutoff), nil
}

// trimEvents rewrites the circuit's log without the lines older than cutoff
// or not decodable, removing it when nothing is left, and returns how many
// lines it dropped.
func (s *Store) trimEvents(ctx context.Context, name string, cutoff time.Time) (int, error) {
	unlock, err := s.lock(ctx, name)
	if err != nil {
		return 0, err
	}
	defer unlock()
	path := s.eventsPath(name)
	b, err := readTail(path, maxEventsRead) // a longer log keeps its newest part
	if err != nil {
		return 0, err
	}
	var keep []byte
	dropped := 0
	if int64(len(b)) == maxEventsRead {
		dropped++ // what came before the newest part, or its first line, cut short
	}
	for line := range eventLines(b) {
		var e breaker.Event
		if len(line) > maxEventLine || json.Unmarshal(line, &e) != nil || e.Time.Before(cutoff) {
			dropped++
			continue
		}
		keep = append(keep, line...)
	}
	switch {
	case dropped == 0:
		return 0, nil
	case len(keep) == 0:
		return dropped, os.Remove(path)
	}
	if keep[len(keep)-1] != '\n' {
		keep = append(keep, '\n')
	}
	return dropped, s.writeAtomic(path, keep)
}

// records lists the names of the regular files NAME+suffix in dir whose NAME
// is valid, sorted by name. A missing dir holds none.
func records(dir, suffix string) ([]string, error) { return entries(dir, suffix, false) }

// named lists, as records does, the names of the entries NAME+suffix in dir
// of any type but a directory: a FIFO or a symlink in place of a circuit's
// file still names the circuit, which the listing's reader then meets (and
// moves the file aside: see setAside) instead of never seeing it.
func named(dir, suffix string) ([]string, error) { return entries(dir, suffix, true) }

func entries(dir, suffix string, anyType bool) ([]string, error) {
	entries, err := readDirUnsorted(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), suffix)
		if ok && (e.Type().IsRegular() || anyType && !e.IsDir()) && fusebox.ValidateName(name) == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// readDirUnsorted is os.ReadDir without its sort by name: the names are
// sorted once, after filtering (a third of a status of ten thousand
// circuits went to sorting their entries twice).
func readDirUnsorted(dir string) ([]os.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// sweepLeftovers removes from dir the temporary files of writeAtomic last
// written before tempBefore and the damaged files moved aside before
// corruptBefore.
func sweepLeftovers(dir string, tempBefore, corruptBefore time.Time) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		var before time.Time
		switch {
		case hasTag(e.Name(), ".tmp-") && strings.HasPrefix(e.Name(), "."):
			before = tempBefore
		case hasTag(e.Name(), ".corrupt-"):
			before = corruptBefore
		default:
			continue
		}
		fi, err := e.Info()
		if err == nil && fi.ModTime().Before(before) {
			err = removeLeftover(filepath.Join(dir, e.Name()), e.IsDir())
		}
		errs = append(errs, ignoreMissing(err))
	}
	return errors.Join(errs...)
}

// removeLeftover removes a temporary or damaged file, or a subdirectory
// moved aside (see repairSubdir) with what it holds; RemoveAll never
// follows a symlink. A subdirectory the caller may not empty, another
// member's 0700 one in a shared dir, is left to its owner's GC.
func removeLeftover(path string, dir bool) error {
	if !dir {
		return os.Remove(path)
	}
	if err := os.RemoveAll(path); err != nil && !errors.Is(err, fs.ErrPermission) {
		return err
	}
	return nil
}

// hasTag reports whether file ends in tag and a dotless suffix, as the names
// of temporary and damaged files do ("db.json.corrupt-20250101T000000Z") and
// no record's does ("db.corrupt-1.json").
func hasTag(file, tag string) bool {
	i := strings.LastIndex(file, tag)
	return i > 0 && !strings.Contains(file[i+len(tag):], ".")
}
