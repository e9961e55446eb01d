// Package breaker is fusebox's circuit breaker as a state machine: pure
// functions of (state, event, now), with no goroutines, timers or I/O.
//
// A [State] is what a store keeps for one circuit. [State.Decide] answers,
// from a state read without a lock, whether an attempt may run;
// [State.Acquire] decides under the store's lock when the circuit is
// half-open, granting probe leases that expire; [State.Record] applies an
// attempt's [Outcome]. Half-open is derived from the time, never stored. A
// generation counts transitions, so that the result of a call begun before
// the last one does not move the breaker. Each method returns the [Event]
// values to record: every failure and every transition, with its time and
// reason.
//
// # Time
//
// A circuit's state is shared between processes, so it is anchored to
// wall-clock time, which can jump. Each stored time is an [Instant]: the
// wall time plus the boot ID and CLOCK_BOOTTIME reading of the machine that
// took it. Elapsed time within one boot is measured on the boot clock,
// which does not jump; across boots the wall clock is used and clamped, so
// an open circuit never stays open longer than its open period from now and
// no open period is skipped within a boot.
//
// Package fusebox runs calls under these states (Circuits.Do) and defines
// where they are kept (the Store contract). This package imports only the
// standard library and internal/human, which writes its durations for
// people.
package breaker
