// Package reliability is fusebox's crash, fault and hostile-input suite
// (issue 4). It holds no code of its own: its tests build the fusebox binary
// (CGO_ENABLED=0, as users get it) and break things around it on purpose —
// processes killed with SIGKILL in the middle of state updates, hundreds of
// processes on one circuit, read-only, full, foreign-owned and booby-trapped
// state dirs, damaged state files, upstreams that refuse, reset, stall, drip
// or flood, signals, malformed configs, planted secrets and hostile names —
// and check that fusebox loses no update, never wedges a circuit, never
// loses the call to itself, and never leaks a secret.
//
// Run it with
//
//	go test ./reliability/                        # the quick run: 100 kills, 50 processes on one lock, no soak, no real users
//	FUSEBOX_TEST_HEAVY=1 go test ./reliability/   # the whole suite, well under 3 minutes on 2 cores
//	FUSEBOX_TEST_HEAVY=1 go test -race ./reliability/   # the same under the race detector, fusebox built with -race too
//	FUSEBOX_TEST_HEAVY=1 go test -short ./reliability/  # smaller counts: 100 kills instead of 500, 50 processes instead of 200
//
// FUSEBOX_RELIABILITY_KILLS=N sets the number of SIGKILLs of the kill loop
// (default 500 in the heavy suite). CI runs the suite once in full, and once more with -short
// while stress-ng keeps every core busy (.ci/run's last phase): the tests
// hold on a busy machine. Their bounds scale with what they measure (a kill
// loop runs until its kills are done; a wait fails only when nothing
// progresses; a cost is CPU time, not wall time), and a count found off
// says whether an update was lost or a process timed out. -short's 50
// processes on one lock are what a machine without a free core works
// through within the file store's 5s lock wait (docs/benchmarks.md,
// "Figures behind bounds in the code"). Tests that need root (tmpfs mounts,
// chown) skip loudly without it, and fail instead when FUSEBOX_TEST_NO_SKIP
// is set, as CI does. docs/reliability.md lists every case with the figures
// of the last run, and the bugs the suite found (all fixed).
package reliability
