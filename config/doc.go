// Package config loads fusebox's YAML config file into the types the
// packages that act on it define: policies (fusebox.Policy), HTTP endpoints
// and chains (httpcall.Endpoint, httpcall.Chain), notification rules
// (notify.Rules) and MQTT health watches (notify.Watch). No library imports
// config: a program may build those values without a config file.
//
// The file has eight top-level keys, all optional:
//
//	state: /var/lib/fusebox   # the state directory; relative to the config file's directory
//	fsync: true               # default true
//	gc_after: 7d              # default 7d; must be more than 0
//	history: {keep: 30d}      # events older than this are pruned
//	mqtt: {broker, ...}       # the MQTT broker of health watches (and notify: mqtt: by default)
//	defaults: {...}           # policy keys for every circuit
//	circuits: {NAME: {...}}   # policy keys, fresh, and http: {...}
//	chains: {NAME: {endpoints: [...], fresh, stale, deadline, hedge}}
//
// The policy keys, in defaults: and in each circuit, are attempts, backoff,
// multiplier, max_delay, jitter, timeout, deadline, retry_budget (20%, or
// {percent, min, window}; null turns off one set in defaults:), trip_after,
// failure_rate ({threshold: 50% or 0.5, window, min_attempts}; null likewise),
// open_for, open_multiplier, open_max, probes and probe_lease.
// A circuit's policy is the defaults with its own keys laid over them, field
// by field (failure_rate and retry_budget as a whole); a field set nowhere stays zero, which
// fusebox reads as the built-in default. An http: block has url (required),
// method, headers, body, timeout (the circuit's timeout: set it in one place),
// retry_on, trip_on_4xx, retry_unsafe, expect {status, jq}, extract and
// max_body, and, for fusebox serve, max_in_flight, pass_query, pass_body,
// allow_subpath and health {path, interval, expect}. A circuit's own
// health: {mqtt: {topic, up, settle}} has fusebox serve open and close it as
// the jq condition up judges each message on topic (a message that is not
// JSON is read as a JSON string; a verdict applies once it has held for
// settle, default 2s), on the broker of the top-level mqtt: {broker,
// username, password}, which notify: mqtt: inherits what it leaves out from. A chain's endpoints name circuits with an http: block or other
// chains, whose endpoints are inlined (a nested chain's own fresh, stale,
// deadline and hedge do not apply). A chain's hedge is a duration more than 0
// and shorter than its deadline (its own, else the sum of its endpoints'), in
// a chain of two endpoints or more.
//
// Durations are Go durations with a "d" unit added ("90s", "1h30m", "7d");
// sizes are whole bytes with an optional B, KiB, MiB, GiB, KB, MB or GB.
//
// # Strictness
//
// Unknown keys, wrong types and impossible values are errors, each an *Error
// with the file, line, column and dotted key; Parse returns all of them
// joined. A mapping written as null (a circuit with no keys, say) is an empty
// mapping; any other value written as null is an error.
//
// # Expansion and secrets
//
// Free-text values (state, url, headers, body, expect.jq, extract) expand
// ${VAR} from the environment, ${file:PATH} to the file's contents less one
// trailing newline (PATH relative to the config file's directory), and $$ to
// a literal $; any other $ is kept. Instead of text, such a value may be
// "!secret NAME", read from secrets.yaml beside the config file (a mapping of
// names to values, read only when a !secret is used). Other values (names,
// numbers, durations, method, retry_on) are not expanded. Every expanded value
// is listed in Config.Secrets and in the Endpoint.Secrets of the endpoint
// using it, so that output can hide it; error messages do not show them.
//
// YAML anchors, aliases and merge keys (<<) work as usual; other tags than
// !secret are errors.
//
// Parse has no side effects: it reads only through its Env.
package config
