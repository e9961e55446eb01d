package file

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

// A shared state dir lets the users of one group (Home Assistant, Node-RED
// and root's cron, say) share its circuits. It is setgid and
// group-writable, and not writable by every user: Open accepts it from
// another owner when the caller is in its group. In it, subdirectories are
// made 2770 and files 0660, whatever the umask, so that every member can
// lock, count and replace them; setgid makes them the dir's group.
const (
	sharedDirMode  = 0o770 | fs.ModeSetgid
	sharedFileMode = 0o660
)

// isShared reports whether fi is a shared dir: setgid and group-writable.
func isShared(fi fs.FileInfo) bool {
	return fi.Mode()&fs.ModeSetgid != 0 && fi.Mode().Perm()&0o020 != 0
}

// inGroup reports whether the caller is in group gid, as its effective or
// a supplementary group.
func inGroup(gid int) bool {
	if os.Getegid() == gid {
		return true
	}
	groups, err := os.Getgroups()
	return err == nil && slices.Contains(groups, gid)
}

// mkdir makes a subdirectory: 0700, or in a shared dir 2770.
func (s *Store) mkdir(dir string) error {
	if !s.shared {
		return os.Mkdir(dir, 0o700)
	}
	if err := os.Mkdir(dir, 0o770); err != nil {
		return err
	}
	return os.Chmod(dir, sharedDirMode) // past the umask
}

// shareFile makes the file open at fd, when the caller owns it, 0660: a new
// file's mode is cut by the umask. A file of another member is left as its
// creator made it.
func shareFile(fd int, euid int) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil && int(st.Uid) == euid && st.Mode&0o777 != sharedFileMode {
		unix.Fchmod(fd, sharedFileMode)
	}
}

// InitShared prepares dir to be shared by the members of group gid: it
// makes dir when missing, gives it (and what is in it, for a dir used
// alone before) the group, makes it setgid and 2770, its subdirectories
// 2770 and its files 0660. The caller must own dir, or be root. A symlink
// in it is left alone, never followed.
func InitShared(dir string, gid int) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 || !d.Type().IsRegular() && !d.IsDir() {
			return nil
		}
		if err := os.Lchown(path, -1, gid); err != nil {
			return fmt.Errorf("give %s to group %d: %w", path, gid, err)
		}
		mode := fs.FileMode(sharedFileMode)
		if d.IsDir() {
			mode = sharedDirMode
		}
		if err := os.Chmod(path, mode); err != nil {
			if errors.Is(err, syscall.EPERM) {
				return fmt.Errorf("chmod %s: %w (run it as the dir's owner or root)", path, err)
			}
			return err
		}
		return nil
	})
}
