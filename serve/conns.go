package serve

import (
	"math"
	"syscall"
)

// connsAllowed returns how many callers' connections the daemon may hold
// open at once within a limit of nofile open descriptors, so that a flood of
// connections meets the connection cap (it waits in the listen backlog) and
// not EMFILE, which would refuse the store's files and the upstream calls of
// the callers already in. Of nofile, 64 and an eighth are kept for what is
// not a caller's connection: stdio, the listener, the runtime's poller, the
// log, each MQTT broker's connection, a Redis pool (ten per CPU), the jq
// children's pipes (a few, under the jq memory bound), and the store's files
// in use at once (a state file and a lock per call in flight). The rest is
// halved: each caller's connection may have a call under way that holds an
// upstream connection (the transport keeps no more idle ones than the cap
// either). At 200 descriptors that is (200-64-25)/2 = 55 connections; at
// 1,024, 416; past 2,500 the cap is DefaultMaxConns.
func connsAllowed(nofile int64) int {
	if nofile <= 0 || nofile > math.MaxInt32 {
		return math.MaxInt32
	}
	return max(8, int((nofile-64-nofile/8)/2))
}

// openFileLimit returns the process's limit on open descriptors (Go raises
// the soft limit to the hard one at start), or 0 when it cannot be read.
func openFileLimit() int64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	return int64(lim.Cur)
}
