package config

import (
	"errors"
	"strings"
	"testing"
)

// ab is a config of endpoints a and b and a chain c of both, its keys
// ending at line 6, for hedge's cases to add a key to.
const ab = "circuits:\n  a: {http: {url: https://a}}\n  b: {http: {url: https://b}}\nchains:\n  c:\n    endpoints: [a, b]\n"

// malformed lists a config for every kind of problem Parse reports, and
// where and how it reports it. FuzzParse starts from these too.
var malformed = []struct {
	name string
	yaml string
	at   string // "LINE:COL" or "LINE:"
	key  string
	msg  string
	file string // default /cfg/config.yaml
}{
	// YAML itself
	{name: "bad YAML", yaml: "a: [1, 2\nb: 3\n", at: "2:1", msg: "must be specified"},
	{name: "tab indentation", yaml: "defaults:\n\tattempts: 3\n", at: "2:", msg: "cannot start any token"},
	{name: "duplicate key", yaml: "fsync: true\nfsync: false\n", at: "2:1", msg: `"fsync" already defined`},
	{name: "two documents", yaml: "fsync: true\n---\nfsync: false\n", at: "2:", msg: "only one YAML document"},
	{name: "top level is a list", yaml: "- a\n- b\n", at: "1:", msg: "want a mapping"},
	{name: "unknown alias", yaml: "fsync: *nope\n", at: "1:8", key: "fsync", msg: "alias *nope names no earlier anchor"},
	{name: "mapping merging itself", yaml: "defaults: &d\n  <<: *d\n", at: "2:7", key: "defaults", msg: "merges a mapping it is part of"},
	{name: "merging a list", yaml: "a: &a [1]\ndefaults:\n  <<: *a\n", at: "3:", key: "defaults", msg: "needs a mapping or a list of mappings"},
	{name: "unknown tag", yaml: "circuits:\n  a:\n    http: {url: !env X}\n", at: "3:", key: "circuits.a.http.url", msg: "unsupported tag !env"},

	// unknown keys, at every level
	{name: "unknown top-level key", yaml: "stat: /x\n", at: "1:1", key: "stat", msg: "did you mean state?"},
	{name: "unknown top-level key without a near one", yaml: "colour: red\n", at: "1:1", key: "colour", msg: "want one of state, fsync"},
	{name: "unknown key in defaults", yaml: "defaults:\n  atempts: 3\n", at: "2:3", key: "defaults.atempts", msg: "did you mean attempts?"},
	{name: "fresh is not a defaults key", yaml: "defaults:\n  fresh: 1m\n", at: "2:3", key: "defaults.fresh", msg: "unknown key"},
	{name: "unknown key in circuit", yaml: "circuits:\n  z2m:\n    open_fr: 3m\n", at: "3:5", key: "circuits.z2m.open_fr", msg: "did you mean open_for?"},
	{name: "unknown key in http", yaml: "circuits:\n  a:\n    http:\n      url: https://x\n      header: {A: b}\n", at: "5:7", key: "circuits.a.http.header", msg: "did you mean headers?"},
	{name: "unknown redirect policy", yaml: "circuits:\n  a:\n    http:\n      url: https://x\n      redirects: samehost\n", at: "5:18", key: "circuits.a.http.redirects", msg: `unknown redirect policy "samehost" (did you mean same-host?)`},
	{name: "redirect policy far from any", yaml: "circuits:\n  a:\n    http:\n      url: https://x\n      redirects: always\n", at: "5:18", key: "circuits.a.http.redirects", msg: "want one of same-host, none, any"},
	{name: "redirects misspelt", yaml: "circuits:\n  a:\n    http:\n      url: https://x\n      redirect: none\n", at: "5:7", key: "circuits.a.http.redirect", msg: "did you mean redirects?"},
	{name: "unknown key in expect", yaml: "circuits:\n  a:\n    http:\n      url: https://x\n      expect: {code: [200]}\n", at: "5:16", key: "circuits.a.http.expect.code", msg: "want one of status, jq"},
	{name: "unknown key in failure_rate", yaml: "defaults:\n  failure_rate: {threshold: 50%, windows: 20}\n", at: "2:34", key: "defaults.failure_rate.windows", msg: "did you mean window?"},
	{name: "unknown key in chain", yaml: "chains:\n  c:\n    endpoint: [a]\n", at: "3:5", key: "chains.c.endpoint", msg: "did you mean endpoints?"},

	// types
	{name: "word for a number", yaml: "defaults:\n  attempts: three\n", at: "2:13", key: "defaults.attempts", msg: `want a whole number, got "three"`},
	{name: "fraction for a whole number", yaml: "defaults:\n  probes: 1.5\n", at: "2:11", key: "defaults.probes", msg: "want a whole number, got 1.5"},
	{name: "huge whole number", yaml: "defaults:\n  probes: 99999999999999999999\n", at: "2:11", key: "defaults.probes", msg: "want a whole number"},
	{name: "text for a bool", yaml: "fsync: sometimes\n", at: "1:8", key: "fsync", msg: "want true or false"},
	{name: "null for a value", yaml: "defaults:\n  attempts:\n", at: "2:", key: "defaults.attempts", msg: "got nothing"},
	{name: "list for circuits", yaml: "circuits: [a, b]\n", at: "1:11", key: "circuits", msg: "want a mapping"},
	{name: "scalar for a list", yaml: "circuits:\n  a:\n    http:\n      url: https://x\n      retry_on: connect\n", at: "5:17", key: "circuits.a.http.retry_on", msg: "want a list"},
	{name: "mapping for a text", yaml: "circuits:\n  a:\n    http:\n      url: {a: b}\n", at: "4:", key: "circuits.a.http.url", msg: "want text, got a mapping"},
	{name: "infinite multiplier", yaml: "defaults:\n  multiplier: .inf\n", at: "2:15", key: "defaults.multiplier", msg: "want a number"},
	{name: "bad jitter", yaml: "defaults:\n  jitter: some\n", at: "2:11", key: "defaults.jitter", msg: `unknown jitter "some"`},
	{name: "bad threshold", yaml: "defaults:\n  failure_rate: {threshold: half, window: 10}\n", at: "2:", key: "defaults.failure_rate.threshold", msg: `want a number, got "half"`},
	{name: "bad percentage", yaml: "defaults:\n  failure_rate: {threshold: lots%, window: 10}\n", at: "2:", key: "defaults.failure_rate.threshold", msg: "want a share like 50%"},

	// values people mistake in their first week
	{name: "zero attempts", yaml: "defaults:\n  attempts: 0\n", at: "2:3", key: "defaults.attempts", msg: "must be at least 1, got 0 (leave attempts out for the default, 3)"},
	{name: "zero attempts in a circuit", yaml: "circuits:\n  z2m:\n    attempts: 0\n", at: "3:5", key: "circuits.z2m.attempts", msg: "must be at least 1, got 0"},
	{name: "stale not longer than fresh", yaml: "circuits:\n  a: {http: {url: 'https://x'}}\nchains:\n  c:\n    endpoints: [a]\n    fresh: 2h\n    stale: 1h\n", at: "7:5", key: "chains.c.stale", msg: "must be longer than fresh (2h0m0s)"},
	{name: "stale equal to fresh", yaml: "circuits:\n  a: {http: {url: 'https://x'}}\nchains:\n  c: {endpoints: [a], fresh: 1h, stale: 1h}\n", at: "4:", key: "chains.c.stale", msg: "must be longer than fresh"},
	{name: "!secret inside a longer value", yaml: "circuits:\n  ha:\n    http:\n      url: https://x\n      headers: {Authorization: \"Bearer !secret key\"}\n", at: "5:", key: "circuits.ha.http.headers.Authorization", msg: "!secret works only as the whole value"},

	{name: "skip_exit out of range", yaml: "circuits:\n  a:\n    skip_exit: 300\n", at: "3:5", key: "circuits.a.skip_exit", msg: "want an exit status from 0 to 255, got 300"},

	// durations
	{name: "duration without unit", yaml: "defaults:\n  timeout: 10\n", at: "2:12", key: "defaults.timeout", msg: `invalid duration "10"`},
	{name: "duration in words", yaml: "defaults:\n  backoff: 5 minutes\n", at: "2:12", key: "defaults.backoff", msg: "invalid duration"},
	{name: "negative duration", yaml: "gc_after: -1d\n", at: "1:11", key: "gc_after", msg: "negative"},
	{name: "zero gc_after", yaml: "gc_after: 0s\n", at: "1:11", key: "gc_after", msg: "more than 0"},
	{name: "bad chain duration", yaml: "chains:\n  c:\n    endpoints: [a]\n    stale: soon\n", at: "4:12", key: "chains.c.stale", msg: "invalid duration"},
	{name: "bad hedge", yaml: "chains:\n  c:\n    endpoints: [a]\n    hedge: soon\n", at: "4:12", key: "chains.c.hedge", msg: "invalid duration"},
	{name: "zero hedge", yaml: ab + "    hedge: 0s\n", at: "7:12", key: "chains.c.hedge", msg: "must be more than 0"},
	{name: "negative hedge", yaml: ab + "    hedge: -100ms\n", at: "7:12", key: "chains.c.hedge", msg: "negative"},
	{name: "hedge as long as the deadline", yaml: ab + "    deadline: 2s\n    hedge: 2s\n", at: "8:5", key: "chains.c.hedge", msg: "must be shorter than the chain's deadline (2s): a hedge that long never starts"},
	{name: "hedge longer than the endpoints' deadlines", yaml: "defaults: {deadline: 1s}\n" + ab + "    hedge: 3s\n", at: "8:5", key: "chains.c.hedge", msg: "must be shorter than the chain's deadline, 2s (the sum of its endpoints' deadlines, as it sets none)"},
	{name: "hedge in a chain of one", yaml: "circuits:\n  a: {http: {url: https://a}}\nchains:\n  c: {endpoints: [a], hedge: 1s}\n", at: "4:23", key: "chains.c.hedge", msg: "needs a chain of two endpoints or more: it starts the next beside the one being tried, and c has only a"},

	// impossible values (fusebox.Policy.Validate)
	{name: "negative attempts", yaml: "defaults:\n  attempts: -1\n", at: "2:3", key: "defaults.attempts", msg: "must be at least 1, got -1"},
	{name: "negative attempts in a circuit", yaml: "circuits:\n  a:\n    attempts: -2\n", at: "3:5", key: "circuits.a.attempts", msg: "must be at least 1, got -2"},
	{name: "multiplier below 1", yaml: "defaults:\n  multiplier: 0.5\n", at: "2:3", key: "defaults.multiplier", msg: "must be at least 1"},
	{name: "open_max below open_for", yaml: "circuits:\n  a:\n    open_for: 10m\n    open_max: 5m\n", at: "4:5", key: "circuits.a.open_max", msg: "must be at least open_for"},
	{name: "open_max below the default open_for", yaml: "circuits:\n  a:\n    open_max: 15s\n", at: "3:5", key: "circuits.a.open_max", msg: "must be at least open_for (30s, the default), got 15s"},
	{name: "open_max in defaults below the default open_for", yaml: "defaults:\n  open_max: 15s\n", at: "2:3", key: "defaults.open_max", msg: "(30s, the default)"},
	{name: "open_max inherited below open_for", yaml: "defaults:\n  open_max: 1m\ncircuits:\n  a:\n    open_for: 3m\n", at: "4:3", key: "circuits.a.open_max", msg: "inherited from defaults"},
	{name: "threshold above 100%", yaml: "defaults:\n  failure_rate: {threshold: 150%, window: 10}\n", at: "2:18", key: "defaults.failure_rate.threshold", msg: "at most 100%"},
	{name: "retry_budget not a share", yaml: "defaults:\n  retry_budget: lots\n", at: "2:", key: "defaults.retry_budget", msg: `want a number, got "lots"`},
	{name: "retry_budget as a bare percentage", yaml: "defaults:\n  retry_budget: 20\n", at: "2:", key: "defaults.retry_budget", msg: "write 20% for a percentage"},
	{name: "retry_budget negative", yaml: "circuits:\n  a: {retry_budget: -5%}\n", at: "2:", key: "circuits.a.retry_budget", msg: "must not be negative"},
	{name: "retry_budget without percent", yaml: "circuits:\n  a:\n    retry_budget: {min: 2}\n", at: "3:5", key: "circuits.a.retry_budget", msg: "needs percent"},
	{name: "retry_budget min 0", yaml: "circuits:\n  a:\n    retry_budget: {percent: 20%, min: 0}\n", at: "3:", key: "circuits.a.retry_budget.min", msg: "must be at least 1"},
	{name: "retry_budget unknown key", yaml: "circuits:\n  a:\n    retry_budget: {percent: 20%, windw: 5s}\n", at: "3:", key: "circuits.a.retry_budget.windw", msg: "did you mean window?"},
	{name: "min_attempts above window", yaml: "circuits:\n  a:\n    failure_rate:\n      threshold: 0.5\n      window: 5\n      min_attempts: 6\n", at: "6:7", key: "circuits.a.failure_rate.min_attempts", msg: "between 0 and the window (5)"},
	{name: "threshold as a bare percentage", yaml: "defaults:\n  failure_rate: {threshold: 50, window: 10}\n", at: "2:29", key: "defaults.failure_rate.threshold", msg: "write 50% for a percentage"},
	{name: "failure_rate without window", yaml: "defaults:\n  failure_rate: {threshold: 50%}\n", at: "2:3", key: "defaults.failure_rate.window", msg: "must be at least 1, got 0"},

	// names
	{name: "bad circuit name", yaml: "circuits:\n  bad name:\n", at: "2:3", key: "circuits.bad name", msg: "use only letters"},
	{name: "dot-dot circuit name", yaml: "circuits:\n  ..:\n", at: "2:3", key: "circuits...", msg: "not allowed"},
	{name: "bad chain name", yaml: "chains:\n  a/b: {endpoints: [x]}\n", at: "2:3", key: "chains.a/b", msg: "use only letters"},
	{name: "circuit and chain share a name", yaml: "circuits:\n  w:\n    http: {url: https://x}\nchains:\n  w: {endpoints: [w]}\n", at: "5:3", key: "chains.w", msg: "also the name of a circuit (line 2)"},

	// chains
	{name: "chain names unknown endpoint", yaml: "chains:\n  c: {endpoints: [nope]}\n", at: "2:19", key: "chains.c.endpoints", msg: "no circuit or chain is named nope"},
	{name: "chain names circuit without http", yaml: "circuits:\n  z2m: {attempts: 2}\nchains:\n  c: {endpoints: [z2m]}\n", at: "4:19", key: "chains.c.endpoints", msg: "circuit z2m has no http: block"},
	{name: "empty chain", yaml: "chains:\n  c: {endpoints: []}\n", at: "2:7", key: "chains.c.endpoints", msg: "at least one endpoint"},
	{name: "chain without endpoints", yaml: "chains:\n  c: {fresh: 1m}\n", at: "2:3", key: "chains.c", msg: "endpoints is required"},
	{name: "null chain", yaml: "chains:\n  c:\n", at: "2:3", key: "chains.c", msg: "endpoints is required"},
	{name: "endpoint listed twice", yaml: "circuits:\n  a: {http: {url: https://x}}\nchains:\n  c: {endpoints: [a, a]}\n", at: "4:22", key: "chains.c.endpoints", msg: "a is listed twice"},
	{name: "chain cycle", yaml: "circuits:\n  x: {http: {url: https://x}}\nchains:\n  a: {endpoints: [x, b]}\n  b: {endpoints: [a]}\n", at: "5:19", key: "chains.b.endpoints", msg: "cycle: a → b → a"},
	{name: "chain naming itself", yaml: "chains:\n  a: {endpoints: [a]}\n", at: "2:19", key: "chains.a.endpoints", msg: "cycle: a → a"},

	// expansion
	{name: "missing env var", yaml: "circuits:\n  a:\n    http: {url: \"https://x/?k=${NOPE}\"}\n", at: "3:", key: "circuits.a.http.url", msg: "environment variable NOPE is not set"},
	{name: "bad variable name", yaml: "state: /x/${1X}\n", at: "1:8", key: "state", msg: "${1X}: not a variable name"},
	{name: "unterminated reference", yaml: "state: /x/${HOST\n", at: "1:8", key: "state", msg: "no closing }"},
	{name: "missing file", yaml: "circuits:\n  a:\n    http:\n      url: https://x\n      body: ${file:/nope/body.json}\n", at: "5:13", key: "circuits.a.http.body", msg: "cannot read /nope/body.json: file does not exist"},
	{name: "empty file reference", yaml: "state: ${file:}\n", at: "1:8", key: "state", msg: "needs a path"},
	{name: "missing secret", yaml: "circuits:\n  a:\n    http:\n      url: https://x\n      headers: {X-Key: !secret nope}\n", at: "5:", key: "circuits.a.http.headers.X-Key", msg: "!secret nope: no key nope in /cfg/secrets.yaml"},
	{name: "missing secrets.yaml", file: "/elsewhere/config.yaml", yaml: "state: !secret dir\n", at: "1:8", key: "state", msg: "needs /elsewhere/secrets.yaml: file does not exist"},
	{name: "secret without a name", yaml: "state: !secret\n", at: "1:", key: "state", msg: "want a secret name after !secret, got nothing"},
	{name: "secret for a number", yaml: "defaults:\n  attempts: !secret api_key\n", at: "2:13", key: "defaults.attempts", msg: "want a whole number; !secret works only in text values"},
	{name: "empty state", yaml: "state: ''\n", at: "1:1", key: "state", msg: "must not be empty"},

	// http
	{name: "http without url", yaml: "circuits:\n  a:\n    http: {method: GET}\n", at: "3:5", key: "circuits.a.http", msg: "url is required"},
	{name: "null http", yaml: "circuits:\n  a:\n    http:\n", at: "3:5", key: "circuits.a.http", msg: "url is required"},
	{name: "url not http", yaml: "circuits:\n  a:\n    http: {url: 'ftp://x/y'}\n", at: "3:", key: "circuits.a.http.url", msg: "want an http:// or https:// URL"},
	{name: "url without host", yaml: "circuits:\n  a:\n    http: {url: 'https:///path'}\n", at: "3:", key: "circuits.a.http.url", msg: "with a host"},
	{name: "url not parseable", yaml: "circuits:\n  a:\n    http: {url: 'https://x/%zz'}\n", at: "3:", key: "circuits.a.http.url", msg: "invalid URL"},
	{name: "bad method", yaml: "circuits:\n  a:\n    http: {url: https://x, method: FETCH}\n", at: "3:", key: "circuits.a.http.method", msg: `unknown method "FETCH"`},
	{name: "bad header name", yaml: "circuits:\n  a:\n    http: {url: https://x, headers: {'X Bad': 1}}\n", at: "3:", key: "circuits.a.http.headers.X Bad", msg: "invalid header name"},
	{name: "header with a line break", yaml: "circuits:\n  a:\n    http: {url: https://x, headers: {X-A: '${file:/run/secrets/multi}'}}\n", at: "3:", key: "circuits.a.http.headers.X-A", msg: "line break"},
	{name: "bad retry_on entry", yaml: "circuits:\n  a:\n    http: {url: https://x, retry_on: [connect, 4xx]}\n", at: "3:", key: "circuits.a.http.retry_on", msg: `unknown failure "4xx"`},
	{name: "retry_on code out of range", yaml: "circuits:\n  a:\n    http: {url: https://x, retry_on: [600]}\n", at: "3:", key: "circuits.a.http.retry_on", msg: "status code 600 is outside 100–599"},
	{name: "expected status out of range", yaml: "circuits:\n  a:\n    http:\n      url: https://x\n      expect: {status: [200, 99]}\n", at: "5:30", key: "circuits.a.http.expect.status", msg: "status code 99"},
	{name: "bad jq", yaml: "circuits:\n  a:\n    http:\n      url: https://x\n      expect: {jq: '.main.temp !='}\n", at: "5:", key: "circuits.a.http.expect.jq", msg: "invalid jq expression"},
	{name: "jq with unknown function", yaml: "circuits:\n  a:\n    http:\n      url: https://x\n      extract: 'nosuchfn(1)'\n", at: "5:16", key: "circuits.a.http.extract", msg: "invalid jq expression"},
	{name: "negative max_body", yaml: "circuits:\n  a:\n    http: {url: https://x, max_body: -1}\n", at: "3:", key: "circuits.a.http.max_body", msg: "must not be negative"},
	{name: "max_body unit", yaml: "circuits:\n  a:\n    http: {url: https://x, max_body: 10parsecs}\n", at: "3:", key: "circuits.a.http.max_body", msg: "invalid size"},
	{name: "zero max_body", yaml: "circuits:\n  a:\n    http: {url: https://x, max_body: 0}\n", at: "3:", key: "circuits.a.http.max_body", msg: "more than 0"},
	{name: "zero max_in_flight", yaml: "circuits:\n  a:\n    http: {url: https://x, max_in_flight: 0}\n", at: "3:", key: "circuits.a.http.max_in_flight", msg: "want at least 1"},
	{name: "max_in_flight not a number", yaml: "circuits:\n  a:\n    http: {url: https://x, max_in_flight: many}\n", at: "3:", key: "circuits.a.http.max_in_flight", msg: ""},
	{name: "pass_query not a bool", yaml: "circuits:\n  a:\n    http: {url: https://x, pass_query: sometimes}\n", at: "3:", key: "circuits.a.http.pass_query", msg: ""},
	{name: "health path not absolute", yaml: "circuits:\n  a:\n    http: {url: https://x, health: {path: api}}\n", at: "3:", key: "circuits.a.http.health.path", msg: "want an absolute path"},
	{name: "health path naming a host", yaml: "circuits:\n  a:\n    http: {url: https://x, health: {path: //evil/x}}\n", at: "3:", key: "circuits.a.http.health.path", msg: "want an absolute path"},
	{name: "health interval zero", yaml: "circuits:\n  a:\n    http: {url: https://x, health: {interval: 0s}}\n", at: "3:", key: "circuits.a.http.health.interval", msg: "more than 0"},
	{name: "health unknown key", yaml: "circuits:\n  a:\n    http: {url: https://x, health: {every: 1m}}\n", at: "3:", key: "circuits.a.http.health.every", msg: "unknown key"},
	{name: "allow_subpath misspelled", yaml: "circuits:\n  a:\n    http: {url: https://x, allow_subpaths: true}\n", at: "3:", key: "circuits.a.http.allow_subpaths", msg: "did you mean allow_subpath?"},
	{name: "timeout set twice", yaml: "circuits:\n  a:\n    timeout: 5s\n    http:\n      url: https://x\n      timeout: 3s\n", at: "6:7", key: "circuits.a.http.timeout", msg: "already set by circuits.a.timeout (line 3)"},
	{name: "fresh without http", yaml: "circuits:\n  a:\n    fresh: 10m\n", at: "3:5", key: "circuits.a.fresh", msg: "needs an http: block"},

	// notify and history
	{name: "misspelled notify key", yaml: "defaults:\n  notify:\n    aftr: 10m\n", at: "3:5", key: "defaults.notify.aftr", msg: "did you mean after?"},
	{name: "misspelled notify in defaults", yaml: "defaults:\n  notfy: {}\n", at: "2:3", key: "defaults.notfy", msg: "did you mean notify?"},
	{name: "bad after", yaml: "circuits:\n  a:\n    notify: {after: soon}\n", at: "3:", key: "circuits.a.notify.after", msg: "duration"},
	{name: "probe_failed zero", yaml: "defaults:\n  notify: {probe_failed: 0}\n", at: "2:", key: "defaults.notify.probe_failed", msg: "at least 1"},
	{name: "webhook format", yaml: "defaults:\n  notify:\n    webhooks: [{url: 'https://ntfy.sh/x', format: nfty}]\n", at: "3:", key: "defaults.notify.webhooks[0].format", msg: "did you mean ntfy?"},
	{name: "webhook without url", yaml: "defaults:\n  notify:\n    webhooks: [{format: ntfy}]\n", at: "3:", key: "defaults.notify.webhooks[0]", msg: "url is required"},
	{name: "webhook url not http", yaml: "defaults:\n  notify:\n    webhooks: [{url: 'mailto:me'}]\n", at: "3:", key: "defaults.notify.webhooks[0].url", msg: "want an http://"},
	{name: "on_open not a list", yaml: "defaults:\n  notify: {on_open: /bin/script}\n", at: "2:", key: "defaults.notify.on_open", msg: "want a list"},
	{name: "on_open empty", yaml: "defaults:\n  notify: {on_open: []}\n", at: "2:", key: "defaults.notify.on_open", msg: "want a command"},
	{name: "heartbeat kind", yaml: "defaults:\n  notify:\n    heartbeats: [{url: 'https://hc/x', kind: kuma}]\n", at: "3:", key: "defaults.notify.heartbeats[0].kind", msg: "want one of healthchecks, uptime_kuma"},
	{name: "mqtt without broker", yaml: "defaults:\n  notify:\n    mqtt: {prefix: fb}\n", at: "3:5", key: "defaults.notify.mqtt", msg: "broker is required"},
	{name: "mqtt broker without port", yaml: "defaults:\n  notify:\n    mqtt: {broker: 'tcp://localhost'}\n", at: "3:", key: "defaults.notify.mqtt.broker", msg: "tcp://host:1883"},
	{name: "mqtt wildcard prefix", yaml: "defaults:\n  notify:\n    mqtt: {broker: 'tcp://h:1883', prefix: 'a/#'}\n", at: "3:", key: "defaults.notify.mqtt.prefix", msg: "without + #"},
	{name: "webhook redirects", yaml: "defaults:\n  notify:\n    webhooks: [{url: 'https://ntfy.sh/x', redirects: nne}]\n", at: "3:", key: "defaults.notify.webhooks[0].redirects", msg: "did you mean none?"},
	{name: "mqtt instance with a slash", yaml: "defaults:\n  notify:\n    mqtt: {broker: 'tcp://h:1883', instance: 'a/b'}\n", at: "3:", key: "defaults.notify.mqtt.instance", msg: "letters, digits"},
	{name: "history keep zero", yaml: "history: {keep: 0s}\n", at: "1:", key: "history.keep", msg: "more than 0"},
	{name: "history misspelled", yaml: "history: {kep: 30d}\n", at: "1:", key: "history.kep", msg: "did you mean keep?"},
}

func TestParseReportsEveryMalformedCase(t *testing.T) {
	vars := map[string]string{"TOKEN": "s3cr3t-token", "HOST": "example.com"}
	files := map[string]string{
		"/run/secrets/multi": "line1\nline2\n",
		"/cfg/secrets.yaml":  "api_key: k-123\n",
	}
	for _, tt := range malformed {
		t.Run(tt.name, func(t *testing.T) {
			file := tt.file
			if file == "" {
				file = "/cfg/config.yaml"
			}
			c, err := Parse(file, []byte(tt.yaml), testEnv(vars, files))
			if err == nil {
				t.Fatalf("Parse succeeded (%+v), want an error", c)
			}
			var first *Error
			if !errors.As(err, &first) {
				t.Fatalf("error %T is not a *config.Error", err)
			}
			want := file + ":" + tt.at
			for _, e := range configErrors(t, err) {
				line := e.Error()
				if strings.HasPrefix(line, want) && strings.Contains(line, tt.msg) &&
					(tt.key == "" || strings.Contains(line, ": "+tt.key+": ") && e.Key == tt.key) {
					return
				}
			}
			t.Errorf("no error at %s with key %q and %q in:\n%v", want, tt.key, tt.msg, err)
		})
	}
}

func TestParseErrorsDoNotShowSecrets(t *testing.T) {
	vars := map[string]string{"TOKEN": "s3cr3t"}
	src := yaml(`
circuits:
  a:
    http:
      url: "https://x/%${TOKEN}"
      expect: {jq: '. == "${TOKEN}" | ('}
`)
	_, err := Parse("c.yaml", src, testEnv(vars, nil))
	if n := len(configErrors(t, err)); n != 2 {
		t.Fatalf("got %d errors, want 2:\n%v", n, err)
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("error shows the secret:\n%v", err)
	}
}

func TestParseReportsAllProblemsInFileOrder(t *testing.T) {
	src := yaml(`
defaults:
  attempts: -1
  open_for: 10m
  open_max: 5m
circuits:
  a: {}
  b: {attempts: 0, colour: red}
chains:
  c: {endpoints: [nope]}
`)
	_, err := Parse("c.yaml", src, Env{})
	var got []string
	for _, e := range configErrors(t, err) {
		got = append(got, e.Error())
	}
	want := []string{
		"c.yaml:2:3: defaults.attempts: must be at least 1, got -1",
		"c.yaml:4:3: defaults.open_max: must be at least open_for (10m0s), got 5m0s",
		"c.yaml:7:7: circuits.b.attempts: must be at least 1, got 0 (leave attempts out for the default, 3)",
		"c.yaml:7:20: circuits.b.colour: unknown key; want one of attempts, backoff, multiplier, max_delay, jitter, timeout, deadline, retry_budget, trip_after, failure_rate, open_for, open_multiplier, open_max, probes, probe_lease, fresh, health, http, notify, skip_exit",
		"c.yaml:9:19: chains.c.endpoints: no circuit or chain is named nope",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseReportsBrokenSecretsFileOnce(t *testing.T) {
	src := yaml(`
state: !secret dir
circuits:
  a:
    http:
      url: !secret url
`)
	files := map[string]string{"/c/secrets.yaml": "dir: [unclosed\n"}
	_, err := Parse("/c/config.yaml", src, testEnv(nil, files))
	errs := configErrors(t, err)
	if len(errs) != 1 || errs[0].File != "/c/secrets.yaml" || errs[0].Line != 1 {
		t.Errorf("got %v, want one syntax error in /c/secrets.yaml", err)
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		err  Error
		want string
	}{
		{Error{File: "c.yaml", Line: 3, Col: 5, Key: "circuits.a.open_for", Msg: "bad"}, "c.yaml:3:5: circuits.a.open_for: bad"},
		{Error{File: "c.yaml", Line: 3, Col: 5, Msg: "syntax"}, "c.yaml:3:5: syntax"},
		{Error{File: "c.yaml", Msg: "no place"}, "c.yaml: no place"},
		{Error{Line: 1, Col: 2, Key: "k", Msg: "two\nlines"}, "1:2: k: two lines"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}
