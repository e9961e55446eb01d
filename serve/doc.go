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
// Circuits.Do and so under the probe lease every process shares. A
// circuit's health: mqtt: watch is judged on every message of its topic
// (Options.Subscribe), and Circuits.Watched opens or closes the circuit in
// the shared store: cron runs skip while it is down, without a request.
//
// # Safety
//
// The daemon is not a proxy: it only calls the URLs of the config, and no
// part of a request names a URL. Before any route runs, and before any body
// is read, the guard refuses absolute-form request targets, CONNECT, and
// paths with "." or ".." segments, encoded dots or slashes, or backslashes;
// a Host header other than the listen address or a configured name (a
// DNS-rebinding page cannot reach it); a request without the token, when one
// is set (it must be, off loopback); and unsafe cross-origin browser
// requests. A refusal closes its connection. A call whose upstream request
// is unsafe (a POST, say) needs an unsafe request of its caller, which the
// cross-origin check covers: a GET, which any page can have a browser send,
// is answered 405.
//
// It serves on net/http's Server, with deadlines for a request's header,
// its body and the writing of its answer, an idle timeout, a header size
// limit and a cap on open connections (see Options), and calls upstreams
// through net/http's Transport. It sets nothing process-wide: the garbage
// collector's settings are the program's (GOGC, GOMEMLIMIT).
package serve
