package command

import (
	"bytes"
	"io"
	"os"
)

// stdoutMemory is how much of an attempt's stdout Run keeps in memory
// before it spills to a temporary file.
const stdoutMemory = 4 << 20

// spool holds one attempt's stdout until the call knows whether that
// attempt ends it: in memory up to mem bytes, then in an unlinked temp file
// in dir ("": os.TempDir()).
//
// Output is never lost to fusebox's own trouble: when the temp file cannot
// be created or written (a full or unwritable dir), the spool writes what
// it held to live, calls trouble, and from then on passes everything
// through to live as it comes. A retried command may then print twice; its
// output is whole, and the attempt fails only if the command does.
//
// It is not safe for concurrent use (exec copies stdout from one goroutine).
type spool struct {
	dir     string
	mem     int
	live    io.Writer
	trouble func(error) // nil: none
	buf     bytes.Buffer
	file    *os.File
	passing bool // the spool could not hold: everything goes to live
}

func (s *spool) Write(p []byte) (int, error) {
	if s.passing {
		return s.live.Write(p)
	}
	if err := s.hold(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// hold adds p to what is held. Its error is live's, once the spool fell
// back.
func (s *spool) hold(p []byte) error {
	if s.file == nil && s.buf.Len()+len(p) <= s.mem {
		s.buf.Write(p)
		return nil
	}
	if s.file == nil {
		f, err := os.CreateTemp(s.dir, "fusebox-spool-*")
		if err != nil {
			return s.fallBack(p, err)
		}
		os.Remove(f.Name()) // nothing left behind, whatever happens next
		if _, err := f.Write(s.buf.Bytes()); err != nil {
			f.Close()
			return s.fallBack(p, err) // buf still holds it all
		}
		s.file = f
		s.buf.Reset()
	}
	n, err := s.file.Write(p)
	if err != nil {
		return s.fallBack(p[n:], err)
	}
	return nil
}

// fallBack writes what the spool held to live, then rest, and passes
// everything after through: cause kept it from holding rest.
func (s *spool) fallBack(rest []byte, cause error) error {
	if s.trouble != nil {
		s.trouble(cause)
	}
	_, err := s.WriteTo(s.live)
	s.passing = true
	s.Close()
	if err != nil {
		return err
	}
	_, err = s.live.Write(rest)
	return err
}

// WriteTo copies what was held to w.
func (s *spool) WriteTo(w io.Writer) (int64, error) {
	if s.file == nil {
		n, err := w.Write(s.buf.Bytes())
		return int64(n), err
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	return io.Copy(w, s.file)
}

// Close discards what was held.
func (s *spool) Close() error {
	s.buf.Reset()
	if s.file != nil {
		f := s.file
		s.file = nil
		return f.Close()
	}
	return nil
}
