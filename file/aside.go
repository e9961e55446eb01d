package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// A file the Store cannot use where one of its records belongs — a symlink,
// a FIFO or another kind of non-regular file, a file another user left so
// that the caller may not open it, one larger than a record may be — is
// moved aside (PATH.corrupt-TIME, as a damaged file is) with one error
// logged, and the circuit carries on with a new file. In a shared dir every
// member may rename any entry, so a file one member left behind, or
// planted, cannot disarm a circuit for the others. Where the dir does not
// allow the rename (it is read-only to the caller, or has the sticky bit),
// the error says so and the file stays.
//
// The counters and lock files are opened by many processes at once and
// without a lock of the circuit's, and the event logs are read without one:
// setAside moves such a file only while it is still the one found unusable,
// so that two processes repairing the same file never move aside the fresh
// file the other made.

// inode is a file's identity.
type inode struct{ dev, ino uint64 }

func inodeOf(st *unix.Stat_t) inode { return inode{uint64(st.Dev), st.Ino} }

// maxRepairs bounds how often one open moves a file aside: a file that is
// unusable again at once is being planted faster than it is moved.
const maxRepairs = 3

// openUsable opens path with flags as openCreate does, moving aside (see
// setAside) a file there it cannot use, and fills st with the open file's
// fstat.
func (s *Store) openUsable(ctx context.Context, path string, flags int, st *unix.Stat_t) (int, error) {
	for range maxRepairs {
		fd, err := s.openCreate(path, flags)
		var problem string
		var id inode
		if err == nil {
			if err := unix.Fstat(fd, st); err != nil {
				unix.Close(fd)
				return -1, &fs.PathError{Op: "fstat", Path: path, Err: err}
			}
			if st.Mode&unix.S_IFMT == unix.S_IFREG {
				return fd, nil
			}
			unix.Close(fd)
			problem, id = notRegular(uint32(st.Mode)), inodeOf(st)
		} else {
			var retry bool
			if problem, id, retry = s.unusable(path, err); retry {
				continue
			} else if problem == "" {
				return -1, err
			}
		}
		if err := s.setAside(ctx, path, id, problem); err != nil {
			return -1, err
		}
	}
	return -1, fmt.Errorf("%s: replaced by a file fusebox cannot use as soon as it was moved aside", path)
}

// readUsable is readAt, moving aside a file at path it cannot use (see
// setAside): it then reads as a missing file.
func (s *Store) readUsable(ctx context.Context, path string, limit int64, longer int) ([]byte, error) {
	for range maxRepairs {
		b, err := readAt(path, limit, longer)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return b, err
		}
		problem, id, retry := s.unusable(path, err)
		switch {
		case retry:
			continue
		case problem == "":
			return nil, err
		}
		if err := s.setAside(ctx, path, id, problem); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%s: replaced by a file fusebox cannot use as soon as it was moved aside", path)
}

// unusable says why the file at path, on which an open or read failed with
// err, cannot be used, with its identity; problem is "" when err is not about
// the file itself (the dir may not be written, the file system is read-only
// or full: err is the answer). retry reports that the file has changed
// since (another process moved it aside, or replaced it): the caller should
// try again.
func (s *Store) unusable(path string, err error) (problem string, id inode, retry bool) {
	// What an open or read gives only for a file that is there, and not a
	// regular one: a symlink under O_NOFOLLOW, a FIFO without a reader, a
	// socket or device, a directory.
	irregular := symlinkRefused(err) || errors.Is(err, errNotRegular) || errors.Is(err, unix.ENXIO) ||
		errors.Is(err, unix.EISDIR) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.EOPNOTSUPP)
	if !irregular && !errors.Is(err, fs.ErrPermission) {
		return "", inode{}, false
	}
	var st unix.Stat_t
	switch lerr := unix.Lstat(path, &st); {
	case lerr == unix.ENOENT:
		// Gone since, or (a permission error) never there: the dir may not
		// be written.
		return "", inode{}, irregular
	case lerr != nil:
		return "", inode{}, false
	}
	id = inodeOf(&st)
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return "it is a symlink", id, false
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return notRegular(uint32(st.Mode)), id, false
	case errors.Is(err, fs.ErrPermission):
		return s.forbidden(&st), id, false
	}
	// A regular file now, where the open met another kind: someone
	// replaced it.
	return "", id, true
}

// forbidden says why a regular file the caller may not open is unusable.
func (s *Store) forbidden(st *unix.Stat_t) string {
	return fmt.Sprintf("it is uid %d's (mode %s) and you (uid %d) may not open it", st.Uid, fs.FileMode(st.Mode&0o777), s.euid)
}

// notRegular says what a file of mode (stat's st_mode) is, that is not a
// regular file.
func notRegular(mode uint32) string {
	var kind string
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		kind = "a FIFO"
	case unix.S_IFCHR, unix.S_IFBLK:
		kind = "a device"
	case unix.S_IFSOCK:
		kind = "a socket"
	case unix.S_IFDIR:
		kind = "a directory"
	default:
		kind = fmt.Sprintf("file type %#o", mode&unix.S_IFMT)
	}
	return "it is not a regular file (" + kind + ")"
}

// setAside moves the file at path, found unusable for problem, aside with
// one error logged, provided it is still the file id: one already moved
// aside, or replaced, by another process is left alone, and the caller
// opens path again either way. The movers of a directory's files take turns
// on an flock of the directory, held for the lstat and the rename.
func (s *Store) setAside(ctx context.Context, path string, id inode, problem string) error {
	dir := filepath.Dir(path)
	unlock, err := s.lockDir(ctx, dir)
	if err != nil {
		return fmt.Errorf("move aside %s (%s): %w", path, problem, err)
	}
	defer unlock()
	var st unix.Stat_t
	switch err := unix.Lstat(path, &st); {
	case err == unix.ENOENT:
		return nil
	case err != nil:
		return &fs.PathError{Op: "lstat", Path: path, Err: err}
	case inodeOf(&st) != id:
		return nil
	}
	return s.moveAside(path, problem, true)
}

// lockDir takes an flock of dir, giving up after the lock timeout or when
// ctx is done.
func (s *Store) lockDir(ctx context.Context, dir string) (unlock func(), err error) {
	fd, err := openFile(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC)
	if err != nil {
		return nil, err
	}
	timer := time.NewTimer(s.lockTimeout)
	defer timer.Stop()
	gate := make(chan struct{}, 1) // flock's: this wait's own, opened when it is over
	gate <- struct{}{}
	if err := flock(ctx, timer.C, fd, dir, gate); err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() { unix.Close(fd) }, nil
}

// tellOnce logs, at most once in the Store's life for each circuit and
// msg, an error that leaves one circuit out of a listing of many: a
// long-lived Store (the daemon) lists them on every request.
func (s *Store) tellOnce(name, msg string, err error) {
	if _, told := s.told.LoadOrStore([2]string{name, msg}, true); !told {
		s.logger.Error(msg, "circuit", name, "err", err)
	}
}

// moveAside renames a damaged or unusable file (or the symlink itself,
// never its target) to PATH.corrupt-TIME, where a person can inspect it and
// GC removes it later. It logs one warning for a damaged file (a crash, an
// edit), one error for a file fusebox cannot use (see setAside).
func (s *Store) moveAside(path, problem string, unusable bool) error {
	to := path + ".corrupt-" + s.now().UTC().Format("20060102T150405Z")
	if err := rename(path, to); err != nil {
		return fmt.Errorf("move aside %s (%s): %w", path, problem, err)
	}
	level, msg := slog.LevelWarn, "moved a damaged file aside; starting afresh"
	if unusable {
		level, msg = slog.LevelError, "moved aside a file fusebox cannot use; starting afresh"
	}
	s.logger.Log(context.Background(), level, msg, "file", path, "problem", problem, "moved_to", to)
	return nil
}
