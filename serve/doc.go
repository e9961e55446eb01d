// Package serve is fusebox's local resilience daemon, `fusebox serve`: it
// answers HTTP callers (n8n, Node-RED, Home Assistant) for each configured
// endpoint and chain with the same retries, breakers, fallbacks and stored
// answers as `fusebox call`, in the same state store, so that a cron job
// that trips a breaker protects the daemon's callers too, and the other way
// round.
//
// # Routes
//
//	GET|POST /call/{name}[/{path...}]  call an endpoint or chain
//	GET      /api/circuits             the `fusebox status --json` document
//	POST     /api/circuits/{name}/trip force a circuit open (?for=10m)
//	POST     /api/circuits/{name}/reset
//	GET      /api/outages              each circuit's outages of the last 24 hours
//	GET      /metrics                  Prometheus text format
//	GET      /                         the status page (embedded)
//
// Callers asking for the same GET at the same moment share one call; an
// endpoint's max_in_flight caps its calls in flight; its health: check
// probes its half-open circuit on the daemon's own schedule, through
// Circuits.Do and so under the probe lease every process shares.
//
// # Safety
//
// The daemon is not a proxy: it only calls the URLs of the config, and no
// part of a request names a URL. Before any route runs, the guard refuses
// absolute-form request targets, CONNECT, and paths with "." or ".."
// segments, encoded dots or slashes, or backslashes; a Host header other
// than the listen address or a configured name (a DNS-rebinding page cannot
// reach it); a request without the token, when one is set (it must be, off
// loopback); and unsafe cross-origin browser requests. Header reads have a
// timeout, and request headers and bodies a size limit.
package serve
