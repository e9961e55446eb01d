package testenv

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// ProcessesNaming returns the live processes (not zombies) with s in their
// command line: a test finds what a command left behind by a marker it put
// there.
func ProcessesNaming(s string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(s)) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && (st[i+2] == 'Z' || st[i+2] == 'X') {
				continue // a zombie its parent has yet to reap
			}
		}
		out = append(out, pid)
	}
	return out
}
