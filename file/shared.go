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
// another owner when the caller is in its group, or is root. Root may
// write any dir, so its membership would add nothing: what keeps root's
// writes in the dir is what keeps every member's, O_NOFOLLOW and the
// checks of each entry. That is what lets root's cron share the .deb's
// /var/lib/fusebox, which systemd gives to the fusebox user (see
// packaging/). In it, subdirectories are
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

// mkdir makes a subdirectory: 0700, or in a shared dir 2770. In a shared dir
// another member may look at it the moment it exists, and a mkdir's mode is
// cut by the umask: the dir is therefore made 2770 under a temporary name
// and renamed into place, so that no member ever sees it half made (and
// refuses it as another user's unshared dir). When a member made it first,
// the error matches fs.ErrExist.
func (s *Store) mkdir(dir string) error {
	if !s.shared {
		return os.Mkdir(dir, 0o700)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	if err := os.Chmod(tmp, sharedDirMode); err != nil { // past the umask
		os.Remove(tmp)
		return err
	}
	if err := renameNoReplace(tmp, dir); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
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

// renameDir renames the directory oldpath to newpath. rename(2) replaces an
// empty directory at newpath, and fails for one with entries; either way the
// directory a member made first, if still empty, is as good as ours, and one
// in use stays: an error matching fs.ErrExist says a member made it.
func renameDir(oldpath, newpath string) error {
	err := os.Rename(oldpath, newpath)
	if err != nil && (errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST)) {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrExist}
	}
	return err
}
