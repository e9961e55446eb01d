//go:build !linux

package file

// renameNoReplace renames the directory oldpath to newpath unless newpath
// exists (see renameDir).
func renameNoReplace(oldpath, newpath string) error { return renameDir(oldpath, newpath) }
