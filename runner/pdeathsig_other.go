//go:build !linux

package runner

import "syscall"

// procAttr is the child's: a process group of its own. Outside Linux a
// fusebox killed by SIGKILL leaves its command running until it ends by
// itself (see pdeathsig_linux.go).
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
