// Package metrics is fusebox's one writer of the Prometheus text format
// (version 0.0.4), used by `fusebox serve`'s /metrics and by `fusebox status
// --format prometheus`, so that a family carries the same name, type and
// labels wherever it appears.
//
// It is written by hand, and small: client_golang's package init alone costs
// a millisecond on every fusebox process, the fail-fast `fusebox run` of
// every cron job included, and fusebox needs only the writing. The tests
// parse and lint the output with client_golang.
//
// [Circuits] gives the families read from the state store (every process's
// counts), [Reasons] the failures by cause from the event log; the daemon
// adds the families of what it counts itself.
package metrics
