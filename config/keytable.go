package config

import (
	"sync"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/notify"
	"github.com/fusebox-hq/fusebox/notify/mqtt"
	"github.com/fusebox-hq/fusebox/redirect"
)

// The key table: every mapping of the config file, the keys it takes and
// what each means. It is the one list the loader's strict-key check offers
// ("did you mean") and the one JSONSchema describes, so that the schema
// editors check a config with cannot drift from what Parse reads; a test
// parses a config setting every key of it (its examples) and finds none
// refused. A key added to a loader's switch goes here too, or
// TestLoaderReadsOnlyTableKeys fails and says so.

// A block is one mapping of the config: the keys it takes.
type block struct {
	doc      string
	keys     []key
	required []string            // keys the loader requires
	needs    map[string][]string // a key and the keys it needs beside it
}

// A key is one key of a block and what its value is: a scalar or list (is),
// a mapping of keys (block), a mapping of names to mappings (each), a list
// of mappings (items), or a scalar or a mapping (is and block).
type key struct {
	name  string
	doc   string
	is    *schema
	block *block
	each  *block
	items *block
	def   any // the default, in the config's own form; nil when none is fixed
	// example is a value the loader accepts, for the test that keeps this
	// table and the loader together; for each, the names of the entries.
	example any
}

// names are the names of b's keys, as the strict-key check lists them.
func (b *block) names() []string {
	out := make([]string, len(b.keys))
	for i, k := range b.keys {
		out[i] = k.name
	}
	return out
}

// with returns a block of b's keys and then more.
func (b *block) with(doc string, more ...key) *block {
	return &block{doc: doc, keys: append(append([]key(nil), b.keys...), more...)}
}

// keyTable is the table's blocks, one for each mapping of the config.
type keyTable struct {
	top, history, topMQTT, policy, retryBudget, failureRate, defaults, circuit,
	circuitHealth, watch, chain, http, expect, httpHealth, notify, webhook,
	heartbeat, notifyMQTT *block
}

var (
	tableOnce  sync.Once
	tableBuilt *keyTable
)

// table returns the key table, built on first use: reading a config whose
// keys are all known never builds it, so a fusebox run pays nothing for it.
func table() *keyTable {
	tableOnce.Do(func() { tableBuilt = newKeyTable() })
	return tableBuilt
}

// newKeyTable builds the table, each block after the blocks it holds.
func newKeyTable() *keyTable {
	defaults, budget := fusebox.DefaultPolicy(), fusebox.RetryBudget{}.WithDefaults()
	// sharedMQTTKeys are the keys a top-level mqtt: block and notify: mqtt: share.
	sharedMQTTKeys := []key{
		{name: "broker", doc: "The MQTT broker, tcp://host:port (mqtt:// is the same).", is: text(), example: "tcp://127.0.0.1:1883"},
		{name: "username", doc: "The user fusebox logs in to the broker as.", is: text(), example: "fusebox"},
		{name: "password", doc: "Better ${MQTT_PASSWORD} or !secret NAME than the password itself.", is: text(), example: "${MQTT_PASSWORD}"},
	}

	historyBlock := &block{
		doc: "The event log (fusebox history).",
		keys: []key{
			{name: "keep", doc: "How long events are kept.", is: positive(), def: formatDuration(fusebox.DefaultEventRetention), example: "30d"},
		},
	}

	topMQTTBlock := &block{
		doc:      "The MQTT broker that health: mqtt: and notify: mqtt: use unless they name their own.",
		keys:     sharedMQTTKeys,
		required: []string{"broker"},
	}

	// jitters are the values of jitter:, as fusebox.ParseJitter takes them.
	jitters := []fusebox.Jitter{fusebox.JitterFull, fusebox.JitterEqual, fusebox.JitterDecorrelated, fusebox.JitterNone}

	retryBudgetBlock := &block{
		doc: "The long form: percent, min and window.",
		keys: []key{
			{name: "percent", doc: "The share of first attempts that may be retried.",
				is: share(&schema{AnyOf: []*schema{{Minimum: num(0), Maximum: num(1)}, {ExclusiveMinimum: num(100)}}}), example: "10%"},
			{name: "min", doc: "Retries allowed in each window whatever the share.", is: integer(num(1), nil), def: budget.Min, example: 1},
			{name: "window", doc: "The window retries and first attempts are counted in.", is: positive(), def: formatDuration(budget.Window), example: "30s"},
		},
		required: []string{"percent"},
	}

	failureRateBlock := &block{keys: []key{
		{name: "threshold", doc: "The share of failed calls in the window that opens the circuit.",
			is: share(&schema{ExclusiveMinimum: num(0), Maximum: num(1)}), example: "50%"},
		{name: "window", doc: "The calls counted: the last this many.", is: integer(num(1), nil), example: 20},
		{name: "min_attempts", doc: "Calls in the window before the rate counts; at most window.", is: integer(num(0), nil), example: 10},
	}}

	policyBlock := &block{keys: []key{
		{name: "attempts", doc: "Attempts of a call, the first included.",
			is: integer(num(1), nil), def: defaults.Retry.Attempts, example: 3},
		{name: "backoff", doc: "The wait before the second attempt, before jitter.",
			is: duration(), def: formatDuration(defaults.Retry.Backoff.First), example: "2s"},
		{name: "multiplier", doc: "How much each wait grows on the one before: at least 1 (0 means the default).",
			is: &schema{Type: "number", AnyOf: []*schema{{Const: 0}, {Minimum: num(1)}}}, def: defaults.Retry.Backoff.Multiplier, example: 2},
		{name: "max_delay", doc: "The longest single wait; at least backoff.",
			is: duration(), def: formatDuration(defaults.Retry.Backoff.Max), example: "30s"},
		{name: "jitter", doc: "How a wait is randomised (AWS's \"Exponential Backoff And Jitter\").",
			is: oneOfNames(jitters), def: string(fusebox.JitterFull), example: "full"},
		{name: "timeout", doc: "The longest one attempt may take.",
			is: duration(), def: formatDuration(defaults.Retry.Timeout), example: "10s"},
		{name: "deadline", doc: "The longest the whole call may take, waits included.",
			is: duration(), def: formatDuration(defaults.Retry.Deadline), example: "60s"},
		{name: "retry_budget", doc: "Retries, across every process, at most this share of first attempts; null turns off one set in defaults:.",
			is: share(&schema{AnyOf: []*schema{{Minimum: num(0), Maximum: num(1)}, {ExclusiveMinimum: num(100)}}}), block: retryBudgetBlock, example: "20%"},
		{name: "trip_after", doc: "Consecutive failed attempts that open the circuit.",
			is: integer(num(0), nil), def: defaults.Breaker.TripAfter, example: 3},
		{name: "failure_rate", doc: "Open the circuit on a share of failures instead of trip_after; null turns off one set in defaults:.",
			block: failureRateBlock},
		{name: "open_for", doc: "How long the circuit stays open before a probe, or auto: learned from the circuit's own outages.",
			is: &schema{AnyOf: []*schema{duration(), {Type: "string", Pattern: "^" + space() + "*auto" + space() + "*$"}}}, def: formatDuration(defaults.Breaker.OpenFor), example: "30s"},
		{name: "open_multiplier", doc: "How much the open period grows after each failed probe: at least 1 (0 means the default).",
			is: &schema{Type: "number", AnyOf: []*schema{{Const: 0}, {Minimum: num(1)}}}, def: defaults.Breaker.OpenMultiplier, example: 2},
		{name: "open_max", doc: "The longest open period; at least open_for.",
			is: duration(), def: formatDuration(defaults.Breaker.OpenMax), example: "5m"},
		{name: "probes", doc: "Callers let through a half-open circuit at once, across every process.",
			is: integer(num(0), nil), def: defaults.Breaker.Probes, example: 1},
		{name: "probe_lease", doc: "How long a probe's claim lasts, so that a killed probe frees the circuit (default: timeout + 2s).",
			is: duration(), example: "15s"},
	}}

	expectBlock := &block{
		doc: "What a good answer looks like.",
		keys: []key{
			{name: "status", doc: "The status codes of a good answer.",
				is: &schema{Type: "array", Items: integer(num(100), num(599))}, example: []int{200}},
			{name: "jq", doc: "A jq condition a good answer's body meets.", is: text(), example: ".main.temp != null"},
		},
	}

	httpHealthBlock := &block{
		doc: "fusebox serve probes the half-open circuit itself.",
		keys: []key{
			{name: "path", doc: "An absolute path on the URL's host, like /api/ (default: the URL's).", is: text(), example: "/api/"},
			{name: "interval", doc: "How often.", is: positive(), def: formatDuration(httpcall.DefaultHealthInterval), example: "30s"},
			{name: "expect", block: expectBlock},
		},
	}

	httpBlock := &block{
		doc: "The circuit is an HTTP endpoint (fusebox call, fusebox serve).",
		keys: []key{
			{name: "url", doc: "An http:// or https:// URL with a host.", is: text(), example: "https://api.example.org/v1/weather"},
			{name: "method", doc: "The HTTP method, in any case.",
				is: &schema{AnyOf: []*schema{oneOfNames(methods), {Type: "string", Pattern: anyCase(methods)}}}, def: "GET", example: "GET"},
			{name: "headers", is: headersSchema(), example: map[string]string{"Authorization": "Bearer ${file:ha_token}"}},
			{name: "body", doc: "The request body.", is: text(), example: `{"q": "Berlin"}`},
			{name: "timeout", doc: "The circuit's timeout, set here or in the circuit, not both.", is: duration(), example: "5s"},
			{name: "retry_on", doc: "The failures retried (default connect, timeout, 5xx, 429).",
				is: &schema{Type: "array", Items: &schema{AnyOf: []*schema{
					{Enum: []any{"connect", "timeout", "5xx", "429"}},
					integer(num(100), num(599)),
					{Type: "string", Pattern: `^\+?0*[1-5][0-9]{2}$`},
				}}}, example: []any{"connect", "timeout", "5xx", "429", 502}},
			{name: "trip_on_4xx", doc: "Count a 4xx answer as a failure of the circuit.", is: boolean(), def: false, example: false},
			{name: "retry_unsafe", doc: "Retry methods that are not idempotent (POST, PATCH).", is: boolean(), def: false, example: false},
			{name: "expect", block: expectBlock},
			{name: "extract", doc: "A jq expression: the answer is its result.", is: text(), example: ".main.temp"},
			{name: "max_body", doc: "The largest response body read.", is: size(), def: "10MiB", example: "10MiB"},
			{name: "redirects", is: redirectsSchema(), def: string(redirect.Policies[0]), example: "same-host"},
			{name: "max_in_flight", doc: "fusebox serve: calls in flight at most; more are answered 503 at once.", is: integer(num(1), nil), example: 4},
			{name: "pass_query", doc: "fusebox serve: pass a caller's query on.", is: boolean(), def: false, example: true},
			{name: "pass_body", doc: "fusebox serve: pass a caller's body on.", is: boolean(), def: false, example: false},
			{name: "allow_subpath", doc: "fusebox serve: allow a path below the URL's.", is: boolean(), def: false, example: true},
			{name: "health", block: httpHealthBlock},
		},
		required: []string{"url"},
	}

	webhookBlock := &block{
		doc: "A webhook POSTed on each transition.",
		keys: []key{
			{name: "url", doc: "Where the message is POSTed: an http:// or https:// URL.", is: text(), example: "https://ntfy.sh/my-home-alerts"},
			{name: "format", doc: "The shape of the request: json, ntfy, gotify or homeassistant.", is: oneOfNames(notify.Formats), def: string(notify.JSON), example: "ntfy"},
			{name: "headers", is: headersSchema(), example: map[string]string{"X-Token": "${NTFY_TOKEN}"}},
			{name: "redirects", is: redirectsSchema(), example: "same-host"},
		},
		required: []string{"url"},
	}

	heartbeatBlock := &block{
		doc: "A URL pinged after each run, so that a monitor notices when runs stop.",
		keys: []key{
			{name: "url", doc: "The URL pinged: an http:// or https:// URL.", is: text(), example: "https://hc-ping.com/your-uuid"},
			{name: "kind", doc: "How the monitor is pinged: healthchecks (URL, or URL/fail with the reason) or uptime_kuma (status=up|down).", is: oneOfNames(notify.HeartbeatKinds), def: string(notify.Healthchecks), example: "uptime_kuma"},
			{name: "redirects", is: redirectsSchema(), example: "same-host"},
		},
		required: []string{"url"},
	}

	// topicPattern is a topic prefix: no wildcards, no leading or trailing /.
	const topicPattern = `[^+#/\x00]([^+#\x00]*[^+#/\x00])?`

	notifyMQTTBlock := &block{
		doc: "Publish each circuit's state over MQTT, with Home Assistant discovery. broker, username and password default to the top-level mqtt: block's.",
		keys: append(append([]key(nil), sharedMQTTKeys...),
			key{name: "prefix", doc: "The topic prefix of the state topics.", is: textMatching("^" + topicPattern + "$"), def: "fusebox", example: "fusebox"},
			key{name: "discovery", doc: `Home Assistant's discovery prefix; "" turns discovery off.`, is: textMatching("^(" + topicPattern + ")?$"), def: "homeassistant", example: "homeassistant"},
			key{name: "instance", doc: "The name of this host in Home Assistant (default: its host name).", is: func() *schema { s := textMatching(namePattern()); s.Not = &schema{Enum: []any{".", ".."}}; return s }(), example: "nas"},
			key{name: "controls", doc: "fusebox serve: also publish a reset button, a trip button and a phase sensor per circuit, and apply their presses (the broker's ACL authorises a press).", is: boolean(), def: false, example: true},
			key{name: "controls_trip_for", doc: "How long the trip button trips a circuit for.", is: positive(), def: formatDuration(notify.DefaultControlsTripFor), example: "1h"},
		),
	}

	notifyBlock := &block{
		doc: "Notifications: one message per transition of an outage.",
		keys: []key{
			{name: "after", doc: "Only outages that last this long.", is: duration(), example: "10m"},
			{name: "probe_failed", doc: "Notify once more at this failed probe of an outage.", is: integer(num(1), nil), example: 6},
			{name: "timeout", doc: "For each message, its one retry included.", is: positive(), def: formatDuration(notify.DefaultTimeout), example: "5s"},
			{name: "webhooks", items: webhookBlock},
			{name: "on_open", doc: "A command run on opened and probe_failed, without a shell.", is: argvSchema(), example: []string{"/usr/local/bin/bridge-down", "--loud"}},
			{name: "on_close", doc: "A command run on closed, without a shell.", is: argvSchema(), example: []string{"/usr/local/bin/bridge-up"}},
			{name: "heartbeats", items: heartbeatBlock},
			{name: "mqtt", block: notifyMQTTBlock},
		},
	}

	defaultsBlock := policyBlock.with("Policy keys for every circuit, and its notifications.",
		key{name: "notify", block: notifyBlock})

	watchBlock := &block{
		doc: "Subscribe to topic on the top-level mqtt: broker and judge each message with up:.",
		keys: []key{
			{name: "topic", doc: "One topic, no wildcards, like zigbee2mqtt/bridge/state.",
				is: textMatching(`^[^+#$\x00][^+#\x00]*$`), example: "zigbee2mqtt/bridge/state"},
			{name: "up", doc: "A jq condition: true closes the circuit, false opens it. A message that is not JSON is read as a JSON string.",
				is: func() *schema { s := text(); s.MinLength = 1; return s }(), example: `(.state? // .) == "online"`},
			{name: "settle", doc: "How long a new verdict must hold before it is applied; 0s applies each at once.", is: duration(), def: formatDuration(mqtt.DefaultSettle), example: "2s"},
		},
		required: []string{"topic", "up"},
	}

	circuitHealthBlock := &block{
		doc: "Open and close the circuit from what a topic says (fusebox serve); an HTTP health check goes in http: health:.",
		keys: []key{
			{name: "mqtt", block: watchBlock},
		},
	}

	circuitBlock := func() *block {
		b := policyBlock.with("A circuit: the defaults with its own keys over them, field by field.",
			key{name: "fresh", doc: "Answer from the stored response while it is younger than this (needs http:).", is: duration(), example: "10m"},
			key{name: "health", block: circuitHealthBlock},
			key{name: "http", block: httpBlock},
			key{name: "notify", block: notifyBlock},
			key{name: "skip_exit", doc: "The exit status of a run skipped because the circuit is open, for a command whose own 75 means something.",
				is: integer(num(0), num(255)), def: 75, example: 99},
		)
		b.needs = map[string][]string{"fresh": {"http"}}
		return b
	}()

	chainBlock := &block{
		doc: "A fallback chain: its endpoints in turn.",
		keys: []key{
			{name: "endpoints", doc: "Circuits with an http: block, or other chains (inlined), tried in turn.",
				is: &schema{Type: "array", Items: text(), MinItems: 1, UniqueItems: true}, example: []string{"api", "api-backup"}},
			{name: "fresh", doc: "Answer from the stored response while it is younger than this.", is: duration(), example: "10m"},
			{name: "stale", doc: "When every endpoint fails, serve the stored response while it is younger than this; longer than fresh.", is: duration(), example: "6h"},
			{name: "deadline", doc: "The longest the whole chain may take (default: the sum of its endpoints').", is: duration(), example: "20s"},
			{name: "hedge", doc: "Start the next endpoint beside one silent this long; shorter than the deadline, in a chain of two or more.", is: positive(), example: "300ms"},
		},
		required: []string{"endpoints"},
	}

	topBlock := &block{
		doc: "fusebox's config file (fusebox validate checks it).",
		keys: []key{
			{name: "state", doc: "The state directory, relative to the config file's directory, or a redis:// (rediss://) URL to share circuits across hosts.",
				is: func() *schema { s := text(); s.MinLength = 1; return s }(), example: "/var/lib/fusebox"},
			{name: "fsync", doc: "Whether state writes are synced to disk; false spares SD cards a little more.",
				is: boolean(), def: true, example: true},
			{name: "gc_after", doc: "Forget circuits unused this long.",
				is: positive(), def: formatDuration(fusebox.DefaultGCAfter), example: "7d"},
			{name: "history", block: historyBlock},
			{name: "mqtt", block: topMQTTBlock},
			{name: "defaults", block: defaultsBlock},
			{name: "circuits", doc: "The circuits, by name: letters, digits, '.', '_' and '-'.", each: circuitBlock, example: []string{"api", "api-backup"}},
			{name: "chains", doc: "Fallback chains of HTTP endpoints, by name; a chain's name is not a circuit's.", each: chainBlock, example: []string{"weather"}},
		},
	}

	return &keyTable{
		top:           topBlock,
		history:       historyBlock,
		topMQTT:       topMQTTBlock,
		policy:        policyBlock,
		retryBudget:   retryBudgetBlock,
		failureRate:   failureRateBlock,
		defaults:      defaultsBlock,
		circuit:       circuitBlock,
		circuitHealth: circuitHealthBlock,
		watch:         watchBlock,
		chain:         chainBlock,
		http:          httpBlock,
		expect:        expectBlock,
		httpHealth:    httpHealthBlock,
		notify:        notifyBlock,
		webhook:       webhookBlock,
		heartbeat:     heartbeatBlock,
		notifyMQTT:    notifyMQTTBlock,
	}
}

func headersSchema() *schema {
	return &schema{
		Description:          "Request headers: names and text values.",
		Type:                 []string{"object", "null"},
		PropertyNames:        &schema{Pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"},
		AdditionalProperties: textMatching(`^[^\r\n\x00]*$`),
	}
}

func redirectsSchema() *schema {
	s := oneOfNames(redirect.Policies)
	s.Description = "Which redirects are followed: same-host (the URL's scheme, host and port), none or any."
	return s
}

func argvSchema() *schema {
	first := text()
	first.MinLength = 1
	return &schema{Type: "array", Items: []*schema{first}, AdditionalItems: text(), MinItems: 1}
}
