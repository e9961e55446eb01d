package runner

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// How much of an attempt's output Run holds until the call knows whether
// to print it. stdout is held whole (a script reads it); stderr, which a
// person reads, is bounded: past stderrHead bytes only the last stderrTail
// are kept, and a line says how much was cut between.
const (
	stdoutMemory = 4 << 20 // then a temp file
	stderrMemory = 64 << 10
	stderrHead   = 1 << 20
	stderrTail   = 64 << 10
)

// spool holds one attempt's stdout or stderr: in memory up to mem bytes,
// then in an unlinked temp file in dir ("": os.TempDir()). With head > 0 it
// keeps the first head bytes and the last tail bytes, and counts what it
// cut between them.
//
// Output is never lost to fusebox's own trouble: when the temp file cannot
// be created or written (a full or unwritable dir), the spool writes what
// it held to live, calls trouble, and from then on passes everything
// through to live as it comes. A retried command may then print twice; its
// output is whole, and the attempt fails only if the command does.
//
// It is not safe for concurrent use (one goroutine copies each pipe).
type spool struct {
	dir      string
	mem      int
	head     int64 // 0: no bound
	tail     int
	what     string // "stderr": names the stream in the line saying what was cut
	live     io.Writer
	trouble  func(error) // nil: none
	buf      bytes.Buffer
	file     *os.File
	held     int64 // bytes of the head held, in buf or file
	lastByte byte  // the head's last byte
	end      []byte
	cut      int64
	passing  bool // the spool could not hold: everything goes to live
}

func (s *spool) Write(p []byte) (int, error) {
	if s.passing {
		return s.live.Write(p)
	}
	first, rest := p, []byte(nil)
	if s.head > 0 && s.held+int64(len(p)) > s.head {
		room := s.head - s.held
		first, rest = p[:room], p[room:]
	}
	if err := s.hold(first); err != nil {
		return 0, err
	}
	if s.passing { // it fell back while holding first
		if _, err := s.live.Write(rest); err != nil {
			return len(first), err
		}
		return len(p), nil
	}
	s.keepEnd(rest)
	return len(p), nil
}

// hold adds p to the head. Its error is live's, once the spool fell back.
func (s *spool) hold(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if s.file == nil && s.buf.Len()+len(p) <= s.mem {
		s.buf.Write(p)
		s.held += int64(len(p))
		s.lastByte = p[len(p)-1]
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
	s.held += int64(n)
	if n > 0 {
		s.lastByte = p[n-1]
	}
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

// keepEnd keeps the last s.tail bytes of what came past the head.
func (s *spool) keepEnd(p []byte) {
	s.end = append(s.end, p...)
	if over := len(s.end) - s.tail; over > 0 {
		s.cut += int64(over)
		s.end = s.end[:copy(s.end, s.end[over:])]
	}
}

// WriteTo copies what was held to w: the head, then, when the middle was
// cut, a line saying how much, and the end.
func (s *spool) WriteTo(w io.Writer) (int64, error) {
	var n int64
	var err error
	if s.file != nil {
		if _, err := s.file.Seek(0, io.SeekStart); err != nil {
			return 0, err
		}
		n, err = io.Copy(w, s.file)
	} else {
		var m int
		m, err = w.Write(s.buf.Bytes())
		n = int64(m)
	}
	if err != nil || len(s.end) == 0 {
		return n, err
	}
	if s.cut > 0 {
		nl := ""
		if s.lastByte != '\n' {
			nl = "\n"
		}
		m, err := fmt.Fprintf(w, "%s[fusebox: %d bytes of the command's %s cut here; the first %d and the last %d are kept]\n", nl, s.cut, s.what, s.head, len(s.end))
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	m, err := w.Write(s.end)
	return n + int64(m), err
}

// Close discards what was held.
func (s *spool) Close() error {
	s.buf.Reset()
	s.end = nil
	if s.file != nil {
		f := s.file
		s.file = nil
		return f.Close()
	}
	return nil
}
