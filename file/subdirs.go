package file

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// subdir is one of the state dir's subdirectories. O_NOFOLLOW guards only
// the last element of a path, so a symlink planted as DIR/events would send
// the store's writes, and GC's removals, into the directory it points to.
// Each subdirectory is therefore checked, by lstat, before its first use by
// a Store: one that is a symlink, not a directory, owned by another user or
// writable by every user is refused. Once is enough: replacing it afterwards
// takes write access to the state dir, which Open makes sure only its owner
// (the caller or root) and, when it is group-writable, its group have.
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
// 0700); without, it gives an error matching fs.ErrNotExist, which callers
// treat as they would the missing file.
func (s *Store) checkSubdir(d subdir, create bool) error {
	if s.subdirOK[d].Load() {
		return nil
	}
	dir := filepath.Join(s.dir, subdirNames[d])
	fi, err := os.Lstat(dir)
	if create && errors.Is(err, fs.ErrNotExist) {
		if err = s.mkdir(dir); err == nil || errors.Is(err, fs.ErrExist) {
			fi, err = os.Lstat(dir)
		}
	}
	if err != nil {
		return err
	}
	if t := fi.Mode().Type(); t != fs.ModeDir && t != fs.ModeSymlink {
		return fmt.Errorf("state dir entry %s is not a directory (mode %s): remove it and fusebox recreates it", dir, fi.Mode())
	}
	if err := checkDir(dir, fi, s.euid); err != nil {
		return err
	}
	s.subdirOK[d].Store(true)
	return nil
}
