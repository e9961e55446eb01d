package runner

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// becomeSubreaper makes this process the reaper of its orphaned
// descendants (PR_SET_CHILD_SUBREAPER): a process the command started that
// outlives its parent, in a session of its own (setsid) or not, is then a
// child of this process rather than of init, where endOrphans finds it.
func becomeSubreaper() error { return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }

// reapBound bounds how long endOrphans waits for the orphans it killed: one
// in uninterruptible sleep (a hung NFS read) dies only when the read ends.
const reapBound = 2 * time.Second

// endOrphans kills every child this process has, with SIGKILL, and reaps
// them: once the command has been reaped, each is a descendant of it that
// the kernel gave to this subreaper. Killing one orphans its own children
// to this process in turn, so it looks again until none is left. It
// returns how many it killed, and the pids it could not (a set-uid
// program's, or one it did not see die within reapBound).
func endOrphans() (killed int, left []int) {
	deadline := time.Now().Add(reapBound)
	for time.Now().Before(deadline) {
		// One wait4 says whether there is any child at all, as there is
		// not after most commands: then no /proc is read. A zombie it
		// finds is an orphan that ended by itself, reaped here.
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.ECHILD {
			return killed, nil
		}
		if got > 0 {
			continue
		}
		pids := children()
		if len(pids) == 0 {
			return killed, nil
		}
		left = left[:0]
		for _, pid := range pids {
			if err := unix.Kill(pid, unix.SIGKILL); err != nil && err != unix.ESRCH {
				left = append(left, pid)
			}
		}
		for _, pid := range pids {
			if slices.Contains(left, pid) {
				continue // not signalled: waiting for it would only wait out reapBound
			}
			if reap(pid, deadline) {
				killed++
			} else {
				left = append(left, pid)
			}
		}
		if len(left) == len(pids) {
			return killed, left // none of them would go: looking again changes nothing
		}
	}
	return killed, left
}

// reap waits for pid, a child of this process, until deadline.
func reap(pid int, deadline time.Time) bool {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		if got == pid || err == unix.ECHILD {
			return true
		}
		if err != nil && err != unix.EINTR {
			return false
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// children returns the pids of this process's children: from each of its
// threads' /proc children list, or, on a kernel without them
// (CONFIG_PROC_CHILDREN), from every process's parent in /proc.
func children() []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	var pids []int
	listed := false
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		listed = true
		for f := range strings.FieldsSeq(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	if listed {
		return pids
	}
	return childrenByScan()
}

// childrenByScan finds this process's children by the parent each process
// in /proc names.
func childrenByScan() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 {
			if ppid, err := strconv.Atoi(f[1]); err == nil && ppid == self {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}
