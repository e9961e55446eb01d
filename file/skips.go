package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/fusebox-hq/fusebox"
)

// RecordSkip appends one byte to .skips/NAME.skips: an O_APPEND write of one
// byte needs no lock, and the file's size is the count.
func (s *Store) RecordSkip(_ context.Context, name string) error {
	if err := fusebox.ValidateName(name); err != nil {
		return fmt.Errorf("record skip: %w", err)
	}
	if err := s.checkSubdir(skipsDir, true); err != nil {
		return fmt.Errorf("record skip: %w", err)
	}
	if err := appendFile(s.skipsPath(name), []byte{'.'}); err != nil {
		return fmt.Errorf("record skip: %w", err)
	}
	return nil
}

// Skips returns the size of .skips/NAME.skips.
func (s *Store) Skips(_ context.Context, name string) (uint64, error) {
	if err := fusebox.ValidateName(name); err != nil {
		return 0, fmt.Errorf("count skips: %w", err)
	}
	path := s.skipsPath(name)
	err := s.checkSubdir(skipsDir, false)
	var fi fs.FileInfo
	if err == nil {
		fi, err = os.Lstat(path)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("count skips: %w", err)
	case !fi.Mode().IsRegular():
		return 0, fmt.Errorf("count skips: %s is not a regular file", path)
	}
	return uint64(fi.Size()), nil
}
