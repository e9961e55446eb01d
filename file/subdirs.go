package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// subdir is one of the state dir's subdirectories. O_NOFOLLOW guards only
// the last element of a path, so a symlink planted as DIR/events would send
// the store's writes, and GC's removals, into the directory it points to.
// Each subdirectory is therefore checked, by lstat, before its first use by
// a Store: one that is a symlink, not a directory, owned by another user or
// writable by every user is refused. Once is enough: replacing it afterwards
// takes write access to the state dir, which Open makes sure only its owner
// (the caller or root) and, when it is group-writable, its group have.
//
// In a shared dir (see shared.go) every member may plant such an entry,
// and one refused would disarm every member's circuits: there a
// subdirectory the members cannot all use is repaired instead. The
// caller's own directory (for root, any directory) is made shared in place
// (2770, the dir's group);
// any other — a symlink, a file, another member's directory the others may
// not use (0700, say, or of another group) — is moved aside as an unusable
// file is (see aside.go), with one error, and made again, shared.
type subdir int

const (
	eventsDir subdir = iota
	answersDir
	countsDir
	locksDir
	numSubdirs
)

var subdirNames = [numSubdirs]string{eventsDir: "events", answersDir: "answers", countsDir: ".counts", locksDir: ".locks"}

// checkSubdir checks subdirectory d before its files are used, at the cost of
// an atomic load once it has passed. With create, a missing d is made (mode
// 0700, or 2770 in a shared dir); without, it gives an error matching
// fs.ErrNotExist, which callers treat as they would the missing file. A
// repair in a shared dir waits at most the lock timeout for the other
// members' repairs.
func (s *Store) checkSubdir(d subdir, create bool) error {
	if s.subdirOK[d].Load() {
		return nil
	}
	dir := filepath.Join(s.dir, subdirNames[d])
	for range maxRepairs {
		fi, err := os.Lstat(dir)
		if create && errors.Is(err, fs.ErrNotExist) {
			if err = s.mkdir(dir); err == nil || errors.Is(err, fs.ErrExist) {
				fi, err = os.Lstat(dir)
			}
		}
		if err != nil {
			return err
		}
		refusal := s.refuseSubdir(dir, fi)
		if refusal == nil && (!s.shared || s.membersMayUse(fi)) {
			s.subdirOK[d].Store(true)
			return nil
		}
		if !s.shared {
			return refusal
		}
		if err := s.repairSubdir(dir, fi); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s: replaced by a directory fusebox cannot use as soon as it was repaired", dir)
}

// refuseSubdir is why the entry dir, lstat as fi, may not be used as a
// subdirectory by the caller; nil when it may.
func (s *Store) refuseSubdir(dir string, fi fs.FileInfo) error {
	if t := fi.Mode().Type(); t != fs.ModeDir && t != fs.ModeSymlink {
		return fmt.Errorf("state dir entry %s is not a directory (mode %s): remove it and fusebox recreates it", dir, fi.Mode())
	}
	return checkDir(dir, fi, s.euid)
}

// membersMayUse reports whether every member of the shared dir's group may
// use the subdirectory fi: it is of the dir's group, setgid (what it holds
// is the group's too) and open to the group.
func (s *Store) membersMayUse(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	return int(st.Gid) == s.gid && fi.Mode()&fs.ModeSetgid != 0 && fi.Mode().Perm()&0o070 == 0o070
}

// repairSubdir makes the subdirectory dir of a shared dir, found as fi,
// usable by every member: it shares the caller's own directory in place,
// and moves anything else aside (checkSubdir then makes it again). Members
// repairing at once take turns on the dir's flock, and what another member
// changed meanwhile is looked at afresh by the caller's next round.
func (s *Store) repairSubdir(dir string, fi fs.FileInfo) error {
	unlock, err := s.lockDir(context.Background(), s.dir) // bounded by the lock timeout
	if err != nil {
		return fmt.Errorf("repair %s: %w", dir, err)
	}
	defer unlock()
	now, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !os.SameFile(fi, now):
		return nil
	}
	fi = now
	if s.refuseSubdir(dir, fi) == nil && s.membersMayUse(fi) {
		return nil // its owner shared it meanwhile
	}
	if shareOwnDir(dir, fi, s.euid, s.gid) {
		return nil
	}
	return s.moveAside(dir, s.subdirProblem(fi), true)
}

// shareOwnDir makes dir, when it is the caller's directory fi (not a
// symlink since), 2770 and the group gid's, and reports whether it did.
// Root may change any directory, and read what it holds.
func shareOwnDir(dir string, fi fs.FileInfo, euid, gid int) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.IsDir() || int(st.Uid) != euid && euid != 0 {
		return false
	}
	fd, err := openFile(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var now unix.Stat_t
	if unix.Fstat(fd, &now) != nil || inodeOf(&now) != (inode{uint64(st.Dev), st.Ino}) {
		return false
	}
	// Only a dir of another group is chowned (the daemon's unit forbids
	// chown: SystemCallFilter=~@privileged), and chmod comes last: a chown
	// may clear setgid.
	if int(now.Gid) != gid && unix.Fchown(fd, -1, gid) != nil {
		return false
	}
	return unix.Fchmod(fd, uint32(sharedDirMode.Perm())|unix.S_ISGID) == nil
}

// subdirProblem says, for the error that moves it aside, why the
// subdirectory fi is unusable to the shared dir's members.
func (s *Store) subdirProblem(fi fs.FileInfo) string {
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return "it is a symlink"
	case !fi.IsDir():
		return "it is not a directory (mode " + fi.Mode().String() + ")"
	case fi.Mode().Perm()&0o002 != 0:
		return fmt.Sprintf("it is writable by every user (mode %s)", fi.Mode())
	case st == nil:
		return "the group's members may not use it"
	}
	return fmt.Sprintf("it is uid %d's, group %d, mode %s, and the members of the state dir's group %d may not all use it", st.Uid, st.Gid, fi.Mode(), s.gid)
}

// Subdir returns the path of the subdirectory name of the state dir, made
// when missing as the store makes its own: 0700, or in a shared dir 2770
// and of the dir's group, so that a Store opened there (a Redis replica,
// say) is one every member may use. Open checks it as any state dir.
func (s *Store) Subdir(name string) (string, error) {
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name {
		return "", fmt.Errorf("state subdirectory %q: not a plain name", name)
	}
	dir := filepath.Join(s.dir, name)
	if err := s.mkdir(dir); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("make state subdirectory: %w", err)
	}
	return dir, nil
}
