package runner

import "syscall"

// procAttr is the child's: a process group of its own, and SIGKILL from
// the kernel when the thread that started it ends, so that a fusebox
// killed by SIGKILL (the OOM killer, a supervisor's stop) does not leave
// its command running past --timeout. Linux ties the parent-death signal
// to the starting thread, not the process: child.run keeps its goroutine
// locked to that thread until the child has been reaped, so no other
// goroutine runs on it, and Go's runtime ends a thread only when a
// goroutine locked to it exits locked (see runtime.LockOSThread).
//
// Pdeathsig reaches the child alone: the command's own children are the
// command's to stop (the kernel does not signal a process group whose
// leader's parent dies).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
