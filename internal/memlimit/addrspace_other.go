//go:build !linux

package memlimit

// limitAddressSpace sets no limit where there is no /proc to read the
// address space's size from (macOS, FreeBSD): there the parent cannot watch
// the child's resident set either, and a jq program's bound is Go's soft
// memory limit in the child (Child), which one step that allocates a
// gigabyte at once passes.
func limitAddressSpace(total int64) error { return nil }
