package file

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fusebox-hq/fusebox"
)

// A circuit's counters live in .counts/NAME.counts: four 64-bit words in the
// machine's byte order — successes, failures, skips, and the last success
// in Unix nanoseconds. Every process maps the file shared and adds with
// atomic instructions, so concurrent adds from any number of processes are
// all kept without a lock, and nothing is written but the words themselves
// (no rename, no fsync: the kernel writes the page back in its own time).
const (
	wordSuccesses = iota
	wordFailures
	wordSkips
	wordLastSuccess
	countWords
	countsSize = countWords * 8
)

// Count adds c to the circuit's counters. After counting a success, at most
// once an hour, it runs GC with the configured retention, as Update does
// after a write: a host whose circuits only ever succeed cleans up too.
func (s *Store) Count(ctx context.Context, name string, c fusebox.Counts) error {
	if err := fusebox.ValidateName(name); err != nil {
		return fmt.Errorf("count: %w", err)
	}
	if err := s.checkSubdir(countsDir, true); err != nil {
		return fmt.Errorf("count %s: %w", name, err)
	}
	err := s.withCounts(ctx, name, func(w *[countWords]uint64) {
		for i, n := range [...]uint64{c.Successes, c.Failures, c.Skips} {
			if n != 0 {
				atomic.AddUint64(&w[i], n)
			}
		}
		if !c.LastSuccess.IsZero() {
			t := uint64(c.LastSuccess.UnixNano())
			for old := atomic.LoadUint64(&w[wordLastSuccess]); old < t; old = atomic.LoadUint64(&w[wordLastSuccess]) {
				if atomic.CompareAndSwapUint64(&w[wordLastSuccess], old, t) {
					break
				}
			}
		}
	})
	if err != nil {
		return fmt.Errorf("count %s: %w", name, err)
	}
	if c.Successes > 0 {
		s.maybeGC(ctx)
	}
	return nil
}

// Counts reads the circuit's counters. It only reads (a state dir another
// user may not write still shows its counts), but for moving aside a file
// it cannot use (see setAside), which then reads as zero counts; a word
// being added to as it is read may be off by that add.
func (s *Store) Counts(ctx context.Context, name string) (fusebox.Counts, error) {
	if err := fusebox.ValidateName(name); err != nil {
		return fusebox.Counts{}, fmt.Errorf("read counts: %w", err)
	}
	err := s.checkSubdir(countsDir, false)
	var b []byte
	if err == nil {
		b, err = s.readUsable(ctx, s.countsPath(name), countsSize, keepHead) // a longer file (an edit) has the words at its start
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fusebox.Counts{}, nil
	}
	if err != nil {
		return fusebox.Counts{}, fmt.Errorf("read counts of %s: %w", name, err)
	}
	return decodeCounts(b), nil
}

// decodeCounts reads the words at the start of a counters file's bytes b:
// a word b is too short for is zero.
func decodeCounts(b []byte) fusebox.Counts {
	var w [countWords]uint64
	for i := range w {
		if len(b) >= (i+1)*8 {
			w[i] = binary.NativeEndian.Uint64(b[i*8:])
		}
	}
	c := fusebox.Counts{Successes: w[wordSuccesses], Failures: w[wordFailures], Skips: w[wordSkips]}
	if t := w[wordLastSuccess]; t != 0 {
		c.LastSuccess = time.Unix(0, int64(t))
	}
	return c
}

// withCounts runs fn on the words of the circuit's counters file, mapped
// shared, creating the file (zeroed) when missing and moving aside one it
// cannot use (see setAside). A file of any other size (a person's edit) is
// extended: extending it with zeros keeps the words it has. A fault on the
// mapping (the file cut short under us by someone else) is an error, not a
// crash.
//
// The mapping is kept for the Store's next Count of the circuit, checked
// with one lstat that the file is still the one mapped (GC may have removed
// it, a person replaced it): a long-lived Store (the daemon) adds to its
// counters with one system call instead of five. Close unmaps them.
func (s *Store) withCounts(ctx context.Context, name string, fn func(*[countWords]uint64)) (err error) {
	s.maps.mu.Lock()
	defer s.maps.mu.Unlock()
	cm := s.maps.m[name]
	if cm != nil {
		var st unix.Stat_t
		if unix.Lstat(s.countsPath(name), &st) != nil || uint64(st.Dev) != cm.dev || st.Ino != cm.ino || st.Size < countsSize {
			s.unmapLocked(name)
			cm = nil
		}
	}
	if cm == nil {
		if cm, err = s.mapCounts(ctx, s.countsPath(name)); err != nil {
			return err
		}
		if s.maps.m == nil {
			s.maps.m = map[string]*countMap{}
		}
		s.maps.m[name] = cm
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			s.unmapLocked(name)
			err = fmt.Errorf("%s: fault while counting (the file was cut short by someone else?): %v", s.countsPath(name), r)
		}
	}()
	fn((*[countWords]uint64)(unsafe.Pointer(&cm.mem[0])))
	return nil
}

// countMap is a circuit's counters file as mapped, with the identity of the
// file it maps.
type countMap struct {
	mem      []byte
	dev, ino uint64
}

// countMaps are the counters files a Store keeps mapped.
type countMaps struct {
	mu sync.Mutex
	m  map[string]*countMap
}

// mapCounts opens (creating it) and maps the counters file at path.
func (s *Store) mapCounts(ctx context.Context, path string) (*countMap, error) {
	var st unix.Stat_t
	fd, err := s.openUsable(ctx, path, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, &st)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd) // the mapping outlives the descriptor
	if st.Size < countsSize {
		if err := allocate(fd, countsSize); err != nil {
			return nil, &fs.PathError{Op: "allocate", Path: path, Err: err}
		}
	}
	mem, err := unix.Mmap(fd, 0, countsSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, &fs.PathError{Op: "mmap", Path: path, Err: err}
	}
	return &countMap{mem: mem, dev: uint64(st.Dev), ino: st.Ino}, nil
}

func (s *Store) unmapLocked(name string) {
	if cm := s.maps.m[name]; cm != nil {
		unix.Munmap(cm.mem)
		delete(s.maps.m, name)
	}
}

// unmapAll releases every mapping the Store keeps.
func (s *Store) unmapAll() {
	s.maps.mu.Lock()
	defer s.maps.mu.Unlock()
	for name := range s.maps.m {
		s.unmapLocked(name)
	}
}
