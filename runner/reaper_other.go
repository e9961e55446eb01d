//go:build !linux

package runner

// becomeSubreaper does nothing: only Linux has subreapers. A descendant of
// the command in a process group of its own outlives it here.
func becomeSubreaper() error { return nil }

func endOrphans() (killed int, left []int) { return 0, nil }
