package file

import (
	"slices"
	"sync"

	"github.com/fusebox-hq/fusebox/breaker"
	"golang.org/x/sys/unix"
)

// A Store keeps the State it last read or wrote of each circuit, decoded,
// with the identity of the file it came from: a later read whose lstat finds
// the same file there returns it without opening, reading or decoding the
// file again. A long-lived Store (the daemon, reading every circuit twice a
// call) makes one system call of a read instead of four and a JSON decode:
// about a third of the daemon's own work on a call of a circuit that has a
// state file (docs/benchmarks.md, "Speed mechanisms against the plain
// path"). A short-lived process reads each state once and gains nothing.
//
// It stays right with other processes writing, because every writer
// replaces a state file by renaming a new one over it (writeAtomic): a new
// state is a new inode. The file a cached State came from is held open, so
// its inode number cannot be given to a new file while it is cached; and
// the size and the modification and change times are compared too, so an
// edit in place (a person's) is seen as well, unless it keeps the size and
// lands within the same timestamp tick as the write before it. A missing
// file is a fresh state at once, whatever is cached.
const maxCachedStates = 256 // at most this many files are held open

// fileID is what tells a file at a path from another or from its own
// earlier content.
type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime unix.Timespec
}

func idOf(st *unix.Stat_t) fileID {
	return fileID{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}
}

type cachedState struct {
	fd    int // the file it came from, held open
	id    fileID
	state breaker.State
}

// stateCache is safe for concurrent use.
type stateCache struct {
	mu sync.Mutex
	m  map[string]*cachedState
}

// lookup returns the cached State of name when it came from the file lst
// describes. The State is the caller's to change.
func (c *stateCache) lookup(name string, lst *unix.Stat_t) (breaker.State, bool) {
	c.mu.Lock()
	e := c.m[name]
	c.mu.Unlock()
	if e == nil || e.id != idOf(lst) {
		return breaker.State{}, false
	}
	st := e.state
	st.Probes = slices.Clone(st.Probes) // a State's methods change its leases in place
	return st, true
}

// put caches st, read from or written to the open file fd, which it now
// owns: it is closed when the entry is replaced or dropped.
func (c *stateCache) put(name string, fd int, fst *unix.Stat_t, st breaker.State) {
	st.Probes = slices.Clone(st.Probes)
	e := &cachedState{fd: fd, id: idOf(fst), state: st}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[name]; old != nil {
		unix.Close(old.fd)
	} else if len(c.m) >= maxCachedStates {
		for k, old := range c.m { // any one: a host with this many circuits reads most of them rarely
			unix.Close(old.fd)
			delete(c.m, k)
			break
		}
	}
	if c.m == nil {
		c.m = map[string]*cachedState{}
	}
	c.m[name] = e
}

// drop forgets name's State.
func (c *stateCache) drop(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[name]; old != nil {
		unix.Close(old.fd)
		delete(c.m, name)
	}
}

// dropAll forgets every State and closes their files.
func (c *stateCache) dropAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, old := range c.m {
		unix.Close(old.fd)
		delete(c.m, name)
	}
}
