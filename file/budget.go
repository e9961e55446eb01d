package file

import (
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/internal/budgetlog"
)

var _ fusebox.BudgetStore = (*Store)(nil)

// A circuit's retry budget lives in .counts/NAME.budget: the first attempts'
// and the retries' times in the window (a budgetlog.Log), as two 32-bit
// lengths and then the times in Unix nanoseconds, little-endian. It is
// changed in place under an flock on the file itself: it is never replaced
// by rename, so the lock is on the file every process sees, and a spend
// costs one open, flock, read and write, with no fsync and no rename. Only a
// circuit with a retry budget has one. A file cut short (a crash mid-write,
// a person's edit) reads as an empty budget: the worst it does is allow the
// retries of one window.
const (
	budgetHeader = 8
	// maxBudgetSize bounds what one spend reads: a million attempts a
	// window. A longer file is damage and reads as empty.
	maxBudgetSize = budgetHeader + 8<<20
)

func (s *Store) budgetPath(name string) string { return s.prefix + ".counts/" + name + ".budget" }

// SpendBudget decides an attempt under the circuit's retry budget, kept in
// .counts/NAME.budget under its flock (see above).
func (s *Store) SpendBudget(ctx context.Context, name string, b fusebox.RetryBudget, now time.Time, retry bool) (fusebox.BudgetSpend, error) {
	if err := fusebox.ValidateName(name); err != nil {
		return fusebox.BudgetSpend{}, fmt.Errorf("spend budget: %w", err)
	}
	if err := s.checkSubdir(countsDir, true); err != nil {
		return fusebox.BudgetSpend{}, fmt.Errorf("spend budget %s: %w", name, err)
	}
	fd, unlock, err := s.lockBudget(ctx, name)
	if err != nil {
		return fusebox.BudgetSpend{}, fmt.Errorf("spend budget %s: %w", name, err)
	}
	defer unlock()
	path := s.budgetPath(name)
	l, err := readBudget(fd, path)
	if err != nil {
		return fusebox.BudgetSpend{}, fmt.Errorf("spend budget %s: %w", name, err)
	}
	// Written even when refused: the attempts that left the window, and
	// those dated after now that now count as made now, are kept so.
	spend := l.Spend(b, now, retry)
	if err := writeBudget(fd, path, l); err != nil {
		return fusebox.BudgetSpend{}, fmt.Errorf("spend budget %s: %w", name, err)
	}
	return spend, nil
}

// lockBudget opens the circuit's budget file and locks it, as lockFile locks
// a lock file (the process's gate first, then a blocking flock given up
// after the lock timeout). GC may remove the file while another holds it:
// whoever then gets that lock tries again on the file now there.
func (s *Store) lockBudget(ctx context.Context, name string) (fd int, unlock func(), err error) {
	path := s.budgetPath(name)
	timer := time.NewTimer(s.lockTimeout)
	defer timer.Stop()
	gate := s.gates.get(path)
	select {
	case gate <- struct{}{}:
	case <-timer.C:
		return -1, nil, s.timedOut(name + " budget")
	case <-ctx.Done():
		return -1, nil, ctx.Err()
	}
	for {
		var open unix.Stat_t
		fd, err := s.openUsable(ctx, path, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, &open)
		if err != nil {
			<-gate
			return -1, nil, err
		}
		if err := flock(ctx, timer.C, fd, path, gate); err != nil {
			if err == errTimedOut {
				return -1, nil, s.timedOut(name + " budget")
			}
			return -1, nil, err
		}
		same, err := stillLinked(&open, path)
		if same {
			return fd, func() { unix.Close(fd); <-gate }, nil
		}
		unix.Close(fd)
		if err != nil {
			<-gate
			return -1, nil, err
		}
	}
}

// readBudget reads the budget file open at fd; a damaged one reads as empty.
func readBudget(fd int, path string) (budgetlog.Log, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return budgetlog.Log{}, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Size < budgetHeader || st.Size > maxBudgetSize {
		return budgetlog.Log{}, nil
	}
	buf := make([]byte, st.Size)
	n, err := unix.Pread(fd, buf, 0)
	if err != nil {
		return budgetlog.Log{}, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	buf = buf[:n]
	if len(buf) < budgetHeader {
		return budgetlog.Log{}, nil
	}
	firsts := int64(binary.LittleEndian.Uint32(buf))
	retries := int64(binary.LittleEndian.Uint32(buf[4:]))
	if int64(len(buf)) != budgetHeader+8*(firsts+retries) {
		return budgetlog.Log{}, nil
	}
	times := func(n int64, at []byte) []int64 {
		ts := make([]int64, n)
		for i := range ts {
			ts[i] = int64(binary.LittleEndian.Uint64(at[8*i:]))
		}
		return ts
	}
	return budgetlog.Log{
		Firsts:  times(firsts, buf[budgetHeader:]),
		Retries: times(retries, buf[budgetHeader+8*firsts:]),
	}, nil
}

// writeBudget replaces the content of the budget file open at fd with l.
func writeBudget(fd int, path string, l budgetlog.Log) error {
	buf := make([]byte, budgetHeader, budgetHeader+8*(len(l.Firsts)+len(l.Retries)))
	binary.LittleEndian.PutUint32(buf, uint32(len(l.Firsts)))
	binary.LittleEndian.PutUint32(buf[4:], uint32(len(l.Retries)))
	for _, t := range l.Firsts {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(t))
	}
	for _, t := range l.Retries {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(t))
	}
	if _, err := unix.Pwrite(fd, buf, 0); err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	if err := unix.Ftruncate(fd, int64(len(buf))); err != nil {
		return &fs.PathError{Op: "truncate", Path: path, Err: err}
	}
	return nil
}
