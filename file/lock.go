package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fusebox-hq/fusebox"
)

// lock takes the circuit's exclusive lock, an flock on the sidecar file
// .locks/NAME.lock (never on the state file, which is replaced by rename:
// a lock on it would be a lock on a file that is gone). It gives up after the
// lock timeout or when ctx is done. The returned func releases the lock.
//
// A busy lock is waited for in a blocking flock, not by polling: the kernel
// queues waiters without spending CPU, where 200 processes polling every
// couple of milliseconds starve the holder of the CPU it needs to finish.
// A blocking flock cannot be cancelled, so a wait given up on stays blocked
// in its own goroutine until the lock comes free, then drops it; the
// process's gate for the circuit stays shut until then, so a process has at
// most one such wait a circuit however often it gives up.
func (s *Store) lock(ctx context.Context, name string) (unlock func(), err error) {
	return s.lockFile(ctx, name, locksDir, s.lockPath(name))
}

// Exclusive runs fn holding the answer key's lock, an flock on
// answers/KEY.lock, taken as lock takes a circuit's (and given up on after
// the same timeout).
func (s *Store) Exclusive(ctx context.Context, key string, fn func() error) error {
	if err := fusebox.ValidateName(key); err != nil {
		return fmt.Errorf("exclusive: %w", err)
	}
	unlock, err := s.lockFile(ctx, "answer "+key, answersDir, s.answerLockPath(key))
	if err != nil {
		return err
	}
	defer unlock()
	return fn()
}

// lockFile takes the flock on path, in subdir, for lock and Exclusive; name
// labels it in errors and keys its gate.
func (s *Store) lockFile(ctx context.Context, name string, dir subdir, path string) (unlock func(), err error) {
	if err := s.checkSubdir(dir, true); err != nil {
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	timer := time.NewTimer(s.lockTimeout)
	defer timer.Stop()
	gate := s.gates.get(name)
	select {
	case gate <- struct{}{}:
	default:
		select {
		case gate <- struct{}{}:
		case <-timer.C:
			return nil, s.timedOut(name)
		case <-ctx.Done():
			return nil, fmt.Errorf("lock %s: %w", name, ctx.Err())
		}
	}
	for {
		// Read-only is enough for an flock, so another member's lock file
		// that is only group-readable serves too. One that cannot serve (a
		// FIFO, a symlink, one the caller may not open) is moved aside.
		var open unix.Stat_t
		fd, err := s.openUsable(ctx, path, unix.O_RDONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, &open)
		if err != nil {
			<-gate
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		if err := flock(ctx, timer.C, fd, path, gate); err != nil {
			if err == errTimedOut {
				return nil, s.timedOut(name)
			}
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		// GC removes a lock file while holding it; whoever was waiting on
		// that file now holds a lock nobody else will see. Try again.
		same, err := stillLinked(&open, path)
		if same {
			return func() { unix.Close(fd); <-gate }, nil
		}
		unix.Close(fd)
		if err != nil {
			<-gate
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
	}
}

var errTimedOut = errors.New("timed out")

func (s *Store) timedOut(name string) error {
	return fmt.Errorf("lock %s: %w after %s", name, fusebox.ErrLockTimeout, s.lockTimeout)
}

// flock locks fd exclusively, waiting until expired fires or ctx is done. On
// failure it closes fd and opens gate, at once or, when a blocked flock is
// left behind, once that returns.
func flock(ctx context.Context, expired <-chan time.Time, fd int, path string, gate chan struct{}) error {
	fail := func(err error) error {
		unix.Close(fd)
		<-gate
		return err
	}
	err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		return nil
	}
	if err != unix.EWOULDBLOCK {
		return fail(&fs.PathError{Op: "flock", Path: path, Err: err})
	}
	done := make(chan error, 1)
	go func() {
		for {
			err := unix.Flock(fd, unix.LOCK_EX)
			if err != unix.EINTR {
				done <- err
				return
			}
		}
	}()
	abandon := func(err error) error {
		go func() {
			<-done
			unix.Close(fd)
			<-gate
		}()
		return err
	}
	select {
	case err := <-done:
		if err != nil {
			return fail(&fs.PathError{Op: "flock", Path: path, Err: err})
		}
		return nil
	case <-expired:
		return abandon(errTimedOut)
	case <-ctx.Done():
		return abandon(ctx.Err())
	}
}

// stillLinked reports whether the open file whose fstat is open is the one
// at path.
func stillLinked(open *unix.Stat_t, path string) (bool, error) {
	var linked unix.Stat_t
	switch err := unix.Lstat(path, &linked); err {
	case nil:
		return open.Dev == linked.Dev && open.Ino == linked.Ino, nil
	case unix.ENOENT:
		return false, nil
	default:
		return false, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
}

// gates holds one gate a circuit: a channel of capacity one that the
// process's goroutines pass one at a time on their way to the circuit's flock.
// Waiting on a gate costs no CPU and, unlike flock, can be given up. A gate
// is kept for every circuit the Store has locked.
type gates struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

func (g *gates) get(name string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]chan struct{}{}
	}
	c, ok := g.m[name]
	if !ok {
		c = make(chan struct{}, 1)
		g.m[name] = c
	}
	return c
}
