//go:build !linux || !(amd64 || arm64)

package file

import "golang.org/x/sys/unix"

// lstatJoin lstats the path that is the concatenation of parts.
func lstatJoin(st *unix.Stat_t, parts ...string) error { return lstatJoined(st, parts) }
