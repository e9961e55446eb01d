package command

import (
	"bytes"
	"io"
	"os"
)

// spoolMemory is how much of an attempt's stdout Run keeps in memory before
// it spills to a temporary file.
const spoolMemory = 4 << 20

// spool holds one attempt's stdout until the call knows whether that attempt
// ends it: in memory up to limit bytes, then in an unlinked temp file. It is
// not safe for concurrent use (exec copies stdout from one goroutine).
type spool struct {
	limit int
	mem   bytes.Buffer
	file  *os.File
	err   error
}

func (s *spool) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.file == nil && s.mem.Len()+len(p) <= s.limit {
		return s.mem.Write(p)
	}
	if s.file == nil {
		f, err := os.CreateTemp("", "fusebox-stdout-*")
		if err != nil {
			s.err = err
			return 0, err
		}
		os.Remove(f.Name()) // nothing left behind, whatever happens next
		s.file = f
		if _, err := s.file.Write(s.mem.Bytes()); err != nil {
			s.err = err
			return 0, err
		}
		s.mem.Reset()
	}
	n, err := s.file.Write(p)
	if err != nil {
		s.err = err
	}
	return n, err
}

// WriteTo copies what was spooled to w.
func (s *spool) WriteTo(w io.Writer) (int64, error) {
	if s.file == nil {
		return s.mem.WriteTo(w)
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	return io.Copy(w, s.file)
}

// Close discards what was spooled.
func (s *spool) Close() error {
	s.mem.Reset()
	if s.file != nil {
		return s.file.Close()
	}
	return nil
}
