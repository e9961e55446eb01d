// Package fusebox keeps scripts and programs from hanging on, and hammering,
// endpoints that are down: retries with exponential backoff and jitter under an
// overall deadline, and circuit breakers whose state lives in a Store so that
// every process on a host (or every host, with a shared store) sees the same
// circuit.
//
// # Composition order
//
// A call made with [Circuits.Do] composes its policies from the outside in:
//
//	deadline (RetryPolicy.Deadline) ⊃ retry loop ⊃ retry budget ⊃ breaker check ⊃ attempt timeout ⊃ fn
//
// Every attempt, not only the first, asks the breaker first: when other
// processes open the circuit while a call waits out its backoff, the call stops
// there instead of adding to a retry storm. A retry asks the circuit's
// [RetryBudget] (when it has one) before the breaker: a retry the budget
// refuses ends the call (ExhaustedError.Budget), takes no probe lease and records no
// failure; first attempts are only counted. Each attempt's result is recorded in
// the store, which moves the circuit between closed, open and half-open
// (package breaker).
//
// # Failing open
//
// fusebox must never be the reason a call is lost: when the Store cannot be
// read or written, Do logs one warning and runs the call as if the circuit were
// closed.
//
// This package is the domain: policies, the [Store] contract and the Do
// loop. The breaker's state machine is package breaker; stores live in
// subpackages (mem, file, redis). It imports only the standard library,
// package breaker and internal/human (durations as people read them).
package fusebox
