package httpcall

import (
	"errors"
	"fmt"
	"io"
	"math"

	"golang.org/x/sync/semaphore"
)

// BodyMemory bounds the bytes of upstream bodies that the attempts of the
// Clients sharing it hold at once (WithBodyMemory), and of what else its
// owner reads through ReadAll (a daemon: its callers' request bodies). An attempt takes its
// body's Content-Length before it reads it, or, when the upstream does not
// say, 64 KiB, then twice what it holds each time the body reaches it (the
// buffer a body of unknown length is read into grows so); once read, it
// gives back what the body did not use, and the rest when the attempt
// ends. It never waits for a share: a body that does not fit fails its
// attempt at once, as a local failure that does not count against the
// circuit, so that upstreams sending slowly cannot queue the others behind
// them; and a body grows past 64 KiB only while 1 MiB stays free, so that
// large bodies cannot crowd out the small answers most calls get. A body's decoded value is counted apart, in the JQMemory. A daemon
// gives one to every Client it makes, so that upstreams answering at once
// cannot have it hold more than the total. It is safe for concurrent use.
type BodyMemory struct {
	total int64
	sem   *semaphore.Weighted
}

// NewBodyMemory returns a bound of total bytes of bodies held at once.
func NewBodyMemory(total int64) *BodyMemory {
	return &BodyMemory{total: total, sem: semaphore.NewWeighted(total)}
}

// WithBodyMemory has the Client's attempts share m's bound on the bodies
// they hold (default: none).
func WithBodyMemory(m *BodyMemory) Option { return func(s *settings) { s.bodyMemory = m } }

// Total returns the bound, in bytes.
func (m *BodyMemory) Total() int64 { return m.total }

// firstBodyShare is what a body of unknown length takes first, and the
// most a body takes of smallBodies, what larger ones leave free.
const (
	firstBodyShare = 64 << 10
	smallBodies    = 1 << 20
)

// ErrNoBodyMemory: a body did not fit the BodyMemory.
var ErrNoBodyMemory = errors.New("no memory free for the body")

// bodyShare is what an attempt holds of a BodyMemory, and reads its body
// through (Read), within it.
type bodyShare struct {
	m     *BodyMemory // nil: no bound
	r     io.Reader
	limit int64 // the most it may hold: max_body and a byte
	held  int64
	read  int64
}

// take takes, out of m (nil: no bound), what body may take first, length
// when it is known (not -1), and returns the share to read body through.
func (m *BodyMemory) take(body io.Reader, length, maxBody int64) (*bodyShare, error) {
	s := &bodyShare{m: m, r: body, limit: maxBody + 1}
	if m == nil {
		return s, nil
	}
	n := int64(firstBodyShare)
	if length >= 0 {
		n = length
	}
	if !s.grow(n) {
		return nil, m.refusal()
	}
	return s, nil
}

func (m *BodyMemory) refusal() error {
	return fmt.Errorf("%w: the %d MiB that bodies may hold at once are in use", ErrNoBodyMemory, m.total>>20)
}

// grow takes n bytes more, within limit, without waiting; past
// firstBodyShare, only while smallBodies stay free.
func (s *bodyShare) grow(n int64) bool {
	n = min(n, s.limit-s.held)
	if n <= 0 {
		return false
	}
	if s.held+n <= firstBodyShare {
		if !s.m.sem.TryAcquire(n) {
			return false
		}
	} else {
		if !s.m.sem.TryAcquire(n + smallBodies) {
			return false
		}
		s.m.sem.Release(smallBodies)
	}
	s.held += n
	return true
}

// Read reads the body, within what the share holds, taking twice as much
// when the body reaches it.
func (s *bodyShare) Read(p []byte) (int, error) {
	if s.m != nil {
		if s.read >= s.held && !s.grow(s.held) {
			if s.held >= s.limit {
				return 0, io.EOF // past max_body: readBody says so
			}
			return 0, s.m.refusal()
		}
		p = p[:min(int64(len(p)), s.held-s.read)]
	}
	n, err := s.r.Read(p)
	s.read += int64(n)
	return n, err
}

// keep gives back what is held beyond n bytes.
func (s *bodyShare) keep(n int64) {
	if s.m != nil && n < s.held {
		s.m.sem.Release(s.held - n)
		s.held = n
	}
}

// giveBack gives back what is held.
func (s *bodyShare) giveBack() { s.keep(0) }

// ReadAll reads body, which says it is length bytes long (-1: it does not
// say; the caller refuses one longer than limit first), within m as an
// upstream body is read: without waiting, failing at once with an error
// matching ErrNoBodyMemory when it does not fit. A body of unknown length
// is read to limit bytes and one more at most, so that a reader that fails
// past limit (http.MaxBytesReader) can. What the body holds stays counted
// until release is called. A nil m bounds nothing.
func (m *BodyMemory) ReadAll(body io.Reader, length, limit int64) (_ []byte, release func(), _ error) {
	b, share, err := m.read(body, length, limit)
	if err != nil {
		if share != nil {
			share.giveBack()
		}
		return nil, func() {}, err
	}
	share.keep(int64(len(b)))
	return b, share.giveBack, nil
}

// read reads body within m, an upstream's as a caller's: a body of known
// length (counted before it is read) into a buffer of that size, whose
// last read sees the end (a transport then reuses the connection), and
// one of unknown length to limit bytes and one more at most. The share it
// returns, nil when the body did not fit at all, holds what was read until
// the caller keeps or gives it back; an error matching ErrNoBodyMemory is
// a body that outgrew what m had free.
func (m *BodyMemory) read(body io.Reader, length, limit int64) ([]byte, *bodyShare, error) {
	share, err := m.take(body, length, limit)
	if err != nil {
		return nil, nil, err
	}
	if length > 0 {
		b := make([]byte, length)
		_, err = io.ReadFull(share, b)
		return b, share, err
	}
	b, err := io.ReadAll(io.LimitReader(share, min(limit, math.MaxInt64-1)+1))
	return b, share, err
}
