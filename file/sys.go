package file

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/fusebox-hq/fusebox/internal/bounds"
)

// File access goes through raw system calls so that the hot paths (Load,
// RecordSkip) stay at open, read or write, close. Every open refuses a symlink
// (O_NOFOLLOW) and cannot hang on a FIFO planted in the dir (O_NONBLOCK).
const (
	readFlags   = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	appendFlags = unix.O_WRONLY | unix.O_APPEND | unix.O_CREAT | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	tempFlags   = unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC
)

func openFile(path string, flags int) (int, error) {
	for {
		fd, err := unix.Open(path, flags, 0o600)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return fd, nil
	}
}

// openCreate opens path with flags that include O_CREAT, making its directory
// first when that is missing: checkSubdir made it, but a person may have
// removed it since. In a shared dir (see Store.shared) a file it creates is
// made group-readable and writable whatever the umask, before any other
// member can see it (see createShared).
func (s *Store) openCreate(path string, flags int) (int, error) {
	fd, err := s.openMaybeShared(path, flags)
	if errors.Is(err, fs.ErrNotExist) {
		if err := s.mkdir(filepath.Dir(path)); err != nil && !errors.Is(err, fs.ErrExist) {
			return -1, err
		}
		fd, err = s.openMaybeShared(path, flags)
	}
	if err == nil && s.shared {
		shareFile(fd, s.euid) // one of ours made before the dir was shared
	}
	return fd, err
}

func (s *Store) openMaybeShared(path string, flags int) (int, error) {
	if !s.shared || flags&unix.O_EXCL != 0 { // an O_EXCL temp file is seen only once renamed, shared by then
		return openFile(path, flags)
	}
	fd, err := openFile(path, flags&^unix.O_CREAT)
	if !errors.Is(err, fs.ErrNotExist) {
		return fd, err
	}
	if err := createShared(path, s.euid); err != nil {
		return -1, err
	}
	return openFile(path, flags)
}

// createShared makes an empty file at path, 0660, unless one is there. A
// file opened with O_CREAT is made with the umask's mode, and made 0660 only
// after: a member who opened it in between would be refused and take it for
// a file planted to lock it out. It is therefore made under a temporary name
// and linked into place (link never replaces a file: a member's made first
// wins). Where the filesystem has no hard links it is created in place.
func createShared(path string, euid int) error {
	dir, base := filepath.Split(path)
	tmp := filepath.Join(dir, "."+base+".tmp-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatUint(rand.Uint64(), 36)) // as writeFile's: gc sweeps a leftover
	fd, err := openFile(tmp, tempFlags)
	if err != nil {
		return err
	}
	shareFile(fd, euid)
	unix.Close(fd)
	defer unix.Unlink(tmp)
	switch err := unix.Link(tmp, path); {
	case err == nil, err == unix.EEXIST:
		return nil
	case err == unix.EPERM || err == unix.ENOTSUP || err == unix.EXDEV:
		fd, err := openFile(path, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC)
		if err != nil {
			return err
		}
		shareFile(fd, euid)
		return unix.Close(fd)
	default:
		return &os.LinkError{Op: "link", Old: tmp, New: path, Err: err}
	}
}

// Bounds on what a Store reads. A state file is a few hundred bytes, an
// answer at most an endpoint's max_body; a damaged file larger than these is
// refused from its size, before anything is read.
const (
	maxStateSize  = bounds.MaxStateSize  // a state file
	maxAnswerSize = bounds.MaxAnswerSize // a stored answer, its body base64-encoded in JSON
	maxEventsRead = bounds.MaxEventsRead // of an event log, the newest part is read
	maxEventLine  = bounds.MaxEventSize  // an event line longer than this is skipped undecoded
)

// symlinkRefused reports whether err is an open's refusal, under
// O_NOFOLLOW, of a symlink: ELOOP on Linux and macOS, EMLINK on FreeBSD.
func symlinkRefused(err error) bool { return errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK) }

// errNotRegular is a FIFO, device, socket or directory where a file should be.
var errNotRegular = errors.New("not a regular file")

// tooLarge is a file longer than the Store reads.
type tooLarge struct{ size, limit int64 }

func (e *tooLarge) Error() string {
	return fmt.Sprintf("%d bytes, more than the %d a Store reads", e.size, e.limit)
}

// readFile returns the content of the regular file at path, at most limit
// bytes. A symlink there gives an error symlinkRefused reports; anything but a
// regular file, errNotRegular; a longer file, a *tooLarge, unread.
func readFile(path string, limit int64) ([]byte, error) {
	return readAt(path, limit, refuseLonger)
}

// readTail is readFile keeping, of a file longer than limit, its last limit
// bytes.
func readTail(path string, limit int64) ([]byte, error) { return readAt(path, limit, keepTail) }

// What readAt does with a file longer than its limit.
const (
	refuseLonger = iota
	keepTail
	keepHead
)

func readAt(path string, limit int64, longer int) ([]byte, error) {
	fd, err := openFile(path, readFlags)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	return readOpen(fd, path, limit, longer, &st)
}

// readOpen is readAt of the file open as fd, which it leaves open; st is
// the file's fstat from before the read.
func readOpen(fd int, path string, limit int64, longer int, st *unix.Stat_t) ([]byte, error) {
	if err := unix.Fstat(fd, st); err != nil {
		return nil, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, &fs.PathError{Op: "read", Path: path, Err: errNotRegular}
	}
	var off int64
	switch {
	case st.Size > limit && longer == refuseLonger:
		return nil, &fs.PathError{Op: "read", Path: path, Err: &tooLarge{st.Size, limit}}
	case st.Size > limit && longer == keepTail:
		off = st.Size - limit
	}
	buf := make([]byte, 0, min(st.Size-off+1, limit+1))
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				if longer != refuseLonger { // longer, or it grew while read
					return buf[:limit], nil
				}
				return nil, &fs.PathError{Op: "read", Path: path, Err: &tooLarge{int64(len(buf)), limit}}
			}
			buf = slices.Grow(buf, int(min(int64(cap(buf)), limit+1-int64(cap(buf)))))
		}
		n, err := unix.Pread(fd, buf[len(buf):cap(buf)], off+int64(len(buf)))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// writeAll writes b to fd. O_APPEND writes of a few kilobytes to a local
// file complete in one call, which is what keeps concurrent appends whole.
func writeAll(fd int, path string, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "write", Path: path, Err: err}
		}
		b = b[n:]
	}
	return nil
}

// writeAtomic replaces the file at path with b: it writes a temporary file
// .BASE.tmp-PID-RANDOM beside it and renames it over path, so a reader sees
// the old content or the new, never a mix. With fsync on, the data reaches
// the disk before the rename, and the rename before writeAtomic returns.
func (s *Store) writeAtomic(path string, b []byte) error {
	dir, base := filepath.Split(path)
	tmp := filepath.Join(dir, "."+base+".tmp-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatUint(rand.Uint64(), 36))
	fd, err := s.openCreate(tmp, tempFlags)
	if err != nil {
		return err
	}
	err = writeAll(fd, tmp, b)
	if err == nil && s.fsync {
		if serr := unix.Fsync(fd); serr != nil {
			err = &fs.PathError{Op: "fsync", Path: tmp, Err: serr}
		}
	}
	if cerr := unix.Close(fd); err == nil && cerr != nil {
		err = &fs.PathError{Op: "close", Path: tmp, Err: cerr}
	}
	if err == nil {
		err = rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if s.fsync {
		return syncDir(dir)
	}
	return nil
}

// rename is os.Rename without its stat of newpath, which is never a
// directory here.
func rename(oldpath, newpath string) error {
	if err := unix.Rename(oldpath, newpath); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return nil
}

// syncDir flushes a directory's entries, making a rename in it durable.
func syncDir(dir string) error {
	fd, err := openFile(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil {
		return &fs.PathError{Op: "fsync", Path: dir, Err: err}
	}
	return nil
}
