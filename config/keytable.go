package config

import (
	"fmt"
	"sync"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/internal/retention"
	"github.com/fusebox-hq/fusebox/notify"
	"github.com/fusebox-hq/fusebox/redirect"
)

// The key table: every mapping of the config file, the keys it takes, what
// each means and how it is decoded (the shape of an entry, and read, which
// walks a mapping through its block, are in keys.go). It is the decoder,
// the strict-key check's list ("did you mean"), the JSON Schema's source
// (JSONSchema), where explain's value sources are recorded (sourced), and
// what fusebox run's partial load reads (run). Adding a key is adding its
// entry here.

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

// table returns the key table, built on first use.
func table() *keyTable {
	tableOnce.Do(func() { tableBuilt = newKeyTable() })
	return tableBuilt
}

// newKeyTable builds the table, each block after the blocks it holds.
func newKeyTable() *keyTable {
	defaults, budget := fusebox.Policy{}.WithDefaults(), defaultBudget()
	// sharedMQTTKeys are the keys a top-level mqtt: block and notify: mqtt:
	// share, read into a *notify.MQTT.
	sharedMQTTKeys := []key{
		{name: "broker", doc: "The MQTT broker, tcp://host:port (mqtt:// is the same).", is: text, example: "tcp://127.0.0.1:1883",
			decode: into(func(l *loader, f entry, m *notify.MQTT) { set(&m.Broker)(l.broker(f)) })},
		{name: "username", doc: "The user fusebox logs in to the broker as.", is: text, example: "fusebox",
			decode: into(func(l *loader, f entry, m *notify.MQTT) { set(&m.Username)(l.str(f.value, f.path)) })},
		{name: "password", doc: "Better ${MQTT_PASSWORD} or !secret NAME than the password itself.", is: text, example: "${MQTT_PASSWORD}",
			decode: into(func(l *loader, f entry, m *notify.MQTT) { set(&m.Password)(l.str(f.value, f.path)) })},
	}

	historyBlock := &block{
		doc: "The event log (fusebox history).",
		keys: []key{
			{name: "keep", doc: "How long events are kept.", is: positive, def: formatDuration(retention.Events), example: "30d",
				decode: into(func(l *loader, f entry, c *Config) { set(&c.HistoryKeep)(l.positive(f)) })},
		},
	}

	topMQTTBlock := &block{
		doc:      "The MQTT broker that health: mqtt: and notify: mqtt: use unless they name their own.",
		keys:     sharedMQTTKeys,
		required: []string{"broker"},
	}

	retryBudgetBlock := &block{
		doc: "The long form: percent, min and window.",
		keys: []key{
			{name: "percent", doc: "The share of first attempts that may be retried.",
				is: func() *schema {
					return share(&schema{AnyOf: []*schema{{Minimum: num(0), Maximum: num(1)}, {ExclusiveMinimum: num(100)}}})
				}, example: "10%", sourced: true,
				decode: into(func(l *loader, f entry, rb *fusebox.RetryBudget) { set(&rb.Percent)(l.threshold(f)) })},
			{name: "min", doc: "Retries allowed in each window whatever the share.", is: func() *schema { return integer(num(1), nil) }, def: budget.Min, example: 1, sourced: true,
				decode: into(func(l *loader, f entry, rb *fusebox.RetryBudget) { set(&rb.Min)(l.budgetMin(f)) })},
			{name: "window", doc: "The window retries and first attempts are counted in.", is: positive, def: formatDuration(budget.Window), example: "30s", sourced: true,
				decode: into(func(l *loader, f entry, rb *fusebox.RetryBudget) { set(&rb.Window)(l.budgetWindow(f)) })},
		},
		required: []string{"percent"},
	}

	failureRateBlock := &block{keys: []key{
		{name: "threshold", doc: "The share of failed calls in the window that opens the circuit.",
			is: func() *schema { return share(&schema{ExclusiveMinimum: num(0), Maximum: num(1)}) }, example: "50%", sourced: true,
			decode: into(func(l *loader, f entry, fr *breaker.FailureRate) { set(&fr.Threshold)(l.threshold(f)) })},
		{name: "window", doc: "The calls counted: the last this many.", is: func() *schema { return integer(num(1), nil) }, example: 20, sourced: true,
			decode: into(func(l *loader, f entry, fr *breaker.FailureRate) { set(&fr.Window)(l.integer(f.value, f.path)) })},
		{name: "min_attempts", doc: "Calls in the window before the rate counts; at most window.", is: func() *schema { return integer(num(0), nil) }, example: 10, sourced: true,
			decode: into(func(l *loader, f entry, fr *breaker.FailureRate) { set(&fr.MinAttempts)(l.integer(f.value, f.path)) })},
	}}

	// The policy keys are read into a *circuitRead: defaults: and each
	// circuit are.
	policyBlock := &block{keys: []key{
		{name: "attempts", doc: "Attempts of a call, the first included.",
			is: func() *schema { return integer(num(1), nil) }, def: defaults.Retry.Attempts, example: 3, sourced: true,
			decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.p.Retry.Attempts)(l.attempts(f)) })},
		{name: "backoff", doc: "The wait before the second attempt, before jitter.",
			is: duration, def: formatDuration(defaults.Retry.Backoff.First), example: "2s", sourced: true,
			decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.p.Retry.Backoff.First)(l.duration(f.value, f.path)) })},
		{name: "multiplier", doc: "How much each wait grows on the one before: at least 1 (0 means the default).",
			is: func() *schema { return &schema{Type: "number", AnyOf: []*schema{{Const: 0}, {Minimum: num(1)}}} }, def: defaults.Retry.Backoff.Multiplier, example: 2, sourced: true,
			decode: into(func(l *loader, f entry, r *circuitRead) {
				set(&r.p.Retry.Backoff.Multiplier)(l.number(f.value, f.path))
			})},
		{name: "max_delay", doc: "The longest single wait; at least backoff.",
			is: duration, def: formatDuration(defaults.Retry.Backoff.Max), example: "30s", sourced: true,
			decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.p.Retry.Backoff.Max)(l.duration(f.value, f.path)) })},
		{name: "jitter", doc: "How a wait is randomised (AWS's \"Exponential Backoff And Jitter\").",
			is: func() *schema { return oneOfNames(jitters) }, def: string(fusebox.JitterFull), example: "full", sourced: true,
			decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.p.Retry.Backoff.Jitter)(l.jitter(f)) })},
		{name: "timeout", doc: "The longest one attempt may take.",
			is: duration, def: formatDuration(defaults.Retry.Timeout), example: "10s", sourced: true,
			decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.p.Retry.Timeout)(l.duration(f.value, f.path)) })},
		{name: "deadline", doc: "The longest the whole call may take, waits included.",
			is: duration, def: formatDuration(defaults.Retry.Deadline), example: "60s", sourced: true,
			decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.p.Retry.Deadline)(l.duration(f.value, f.path)) })},
		{name: "retry_budget", doc: "Retries, across every process, at most this share of first attempts; null turns off one set in defaults:.",
			is: func() *schema {
				return share(&schema{AnyOf: []*schema{{Minimum: num(0), Maximum: num(1)}, {ExclusiveMinimum: num(100)}}})
			}, block: retryBudgetBlock, example: "20%", sourced: true,
			decode: into(func(l *loader, f entry, r *circuitRead) {
				r.p.Retry.Budget = l.retryBudget(f, retryBudgetBlock, r.refs)
			})},
		{name: "trip_after", doc: "Consecutive failed attempts that open the circuit.",
			is: func() *schema { return integer(num(0), nil) }, def: defaults.Breaker.TripAfter, example: 3, sourced: true,
			decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.p.Breaker.TripAfter)(l.integer(f.value, f.path)) })},
		{name: "failure_rate", doc: "Open the circuit on a share of failures instead of trip_after; null turns off one set in defaults:.",
			block: failureRateBlock, sourced: true,
			decode: into(func(l *loader, f entry, r *circuitRead) {
				r.p.Breaker.FailureRate = l.failureRate(f, failureRateBlock, r.refs)
			})},
		{name: "open_for", doc: "How long the circuit stays open before a probe, or auto: learned from the circuit's own outages.",
			is: func() *schema {
				return &schema{AnyOf: []*schema{duration(), {Type: "string", Pattern: "^" + space() + "*auto" + space() + "*$"}}}
			}, def: formatDuration(defaults.Breaker.OpenFor), example: "30s", sourced: true,
			decode: into(func(l *loader, f entry, r *circuitRead) { l.openFor(f, &r.p.Breaker) })},
		{name: "open_multiplier", doc: "How much the open period grows after each failed probe: at least 1 (0 means the default).",
			is: func() *schema { return &schema{Type: "number", AnyOf: []*schema{{Const: 0}, {Minimum: num(1)}}} }, def: defaults.Breaker.OpenMultiplier, example: 2, sourced: true,
			decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.p.Breaker.OpenMultiplier)(l.number(f.value, f.path)) })},
		{name: "open_max", doc: "The longest open period; at least open_for.",
			is: duration, def: formatDuration(defaults.Breaker.OpenMax), example: "5m", sourced: true,
			decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.p.Breaker.OpenMax)(l.duration(f.value, f.path)) })},
		{name: "probes", doc: "Callers let through a half-open circuit at once, across every process.",
			is: func() *schema { return integer(num(0), nil) }, def: defaults.Breaker.Probes, example: 1, sourced: true,
			decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.p.Breaker.Probes)(l.integer(f.value, f.path)) })},
		{name: "probe_lease", doc: "How long a probe's claim lasts, so that a killed probe frees the circuit (default: timeout + 2s).",
			is: duration, example: "15s", sourced: true,
			decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.p.Breaker.ProbeLease)(l.duration(f.value, f.path)) })},
	}}

	expectBlock := &block{
		doc: "What a good answer looks like.",
		keys: []key{
			{name: "status", doc: "The status codes of a good answer.",
				is: func() *schema { return &schema{Type: "array", Items: integer(num(100), num(599))} }, example: []int{200},
				decode: into(func(l *loader, f entry, x *httpcall.Expect) { x.Status = l.statusCodes(f) })},
			{name: "jq", doc: "A jq condition a good answer's body meets.", is: text, example: ".main.temp != null",
				decode: into(func(l *loader, f entry, x *httpcall.Expect) { set(&x.JQ)(l.jq(f)) })},
		},
	}

	httpHealthBlock := &block{
		doc: "fusebox serve probes the half-open circuit itself.",
		keys: []key{
			{name: "path", doc: "An absolute path on the URL's host, like /api/ (default: the URL's).", is: text, example: "/api/",
				decode: into(func(l *loader, f entry, h *httpcall.Health) { set(&h.Path)(l.healthPath(f)) })},
			{name: "interval", doc: "How often.", is: positive, def: formatDuration(httpcall.DefaultHealthInterval), example: "30s",
				decode: into(func(l *loader, f entry, h *httpcall.Health) { set(&h.Interval)(l.positive(f)) })},
			{name: "expect", block: expectBlock,
				decode: into(func(l *loader, f entry, h *httpcall.Health) { h.Expect = l.expect(f, expectBlock) })},
		},
	}

	// The http: keys are read into the *circuitRead of the circuit, whose
	// endpoint httpEndpoint has made.
	httpBlock := &block{
		doc: "The circuit is an HTTP endpoint (fusebox call, fusebox serve).",
		keys: []key{
			{name: "url", doc: "An http:// or https:// URL with a host.", is: text, example: "https://api.example.org/v1/weather",
				decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.endpoint.URL)(l.url(f)) })},
			{name: "method", doc: "The HTTP method, in any case.",
				is: func() *schema {
					return &schema{AnyOf: []*schema{oneOfNames(methods), {Type: "string", Pattern: anyCase(methods)}}}
				}, def: "GET", example: "GET",
				decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.endpoint.Method)(l.method(f)) })},
			{name: "headers", is: headersSchema, example: map[string]string{"Authorization": "Bearer ${file:ha_token}"},
				decode: into(func(l *loader, f entry, r *circuitRead) { r.endpoint.Headers = l.headers(f) })},
			{name: "body", doc: "The request body.", is: text, example: `{"q": "Berlin"}`,
				decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.endpoint.Body)(l.str(f.value, f.path)) })},
			{name: "timeout", doc: "The circuit's timeout, set here or in the circuit, not both.", is: duration, example: "5s",
				decode: into(func(l *loader, f entry, r *circuitRead) { l.endpointTimeout(f, r) })},
			{name: "retry_on", doc: "The failures retried (default connect, timeout, 5xx, 429).",
				is: func() *schema {
					return &schema{Type: "array", Items: &schema{AnyOf: []*schema{
						{Enum: []any{"connect", "timeout", "5xx", "429"}},
						integer(num(100), num(599)),
						{Type: "string", Pattern: `^\+?0*[1-5][0-9]{2}$`},
					}}}
				}, example: []any{"connect", "timeout", "5xx", "429", 502},
				decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.endpoint.RetryOn)(l.retryOn(f)) })},
			{name: "trip_on_4xx", doc: "Count a 4xx answer as a failure of the circuit.", is: boolean, def: false, example: false,
				decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.endpoint.TripOn4xx)(l.boolean(f.value, f.path)) })},
			{name: "retry_unsafe", doc: "Retry methods that are not idempotent (POST, PATCH).", is: boolean, def: false, example: false,
				decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.endpoint.RetryUnsafe)(l.boolean(f.value, f.path)) })},
			{name: "expect", block: expectBlock,
				decode: into(func(l *loader, f entry, r *circuitRead) { r.endpoint.Expect = l.expect(f, expectBlock) })},
			{name: "extract", doc: "A jq expression: the answer is its result.", is: text, example: ".main.temp",
				decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.endpoint.Extract)(l.jq(f)) })},
			{name: "max_body", doc: "The largest response body read.", is: size, def: "10MiB", example: "10MiB",
				decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.endpoint.MaxBody)(l.maxBody(f)) })},
			{name: "redirects", is: redirectsSchema, def: string(redirect.Policies[0]), example: "same-host",
				decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.endpoint.Redirects)(l.redirects(f)) })},
			{name: "max_in_flight", doc: "fusebox serve: calls in flight at most; more are answered 503 at once.", is: func() *schema { return integer(num(1), nil) }, example: 4,
				decode: into(func(l *loader, f entry, r *circuitRead) {
					set(&r.endpoint.MaxInFlight)(l.positiveInt(f, "want at least 1, got %d (leave it out for no limit)"))
				})},
			{name: "pass_query", doc: "fusebox serve: pass a caller's query on.", is: boolean, def: false, example: true,
				decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.endpoint.PassQuery)(l.boolean(f.value, f.path)) })},
			{name: "pass_body", doc: "fusebox serve: pass a caller's body on.", is: boolean, def: false, example: false,
				decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.endpoint.PassBody)(l.boolean(f.value, f.path)) })},
			{name: "allow_subpath", doc: "fusebox serve: allow a path below the URL's.", is: boolean, def: false, example: true,
				decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.endpoint.AllowSubpath)(l.boolean(f.value, f.path)) })},
			{name: "health", block: httpHealthBlock,
				decode: into(func(l *loader, f entry, r *circuitRead) { r.endpoint.Health = l.health(f, httpHealthBlock) })},
		},
		required: []string{"url"},
	}

	webhookBlock := &block{
		doc: "A webhook POSTed on each transition.",
		keys: []key{
			{name: "url", doc: "Where the message is POSTed: an http:// or https:// URL.", is: text, example: "https://ntfy.sh/my-home-alerts",
				decode: into(func(l *loader, f entry, w *notify.Webhook) { set(&w.URL)(l.url(f)) })},
			{name: "format", doc: "The shape of the request: json, ntfy, gotify or homeassistant.", is: func() *schema { return oneOfNames(notify.Formats) }, def: string(notify.JSON), example: "ntfy",
				decode: into(func(l *loader, f entry, w *notify.Webhook) { set(&w.Format)(oneOf(l, f, notify.Formats)) })},
			{name: "headers", is: headersSchema, example: map[string]string{"X-Token": "${NTFY_TOKEN}"},
				decode: into(func(l *loader, f entry, w *notify.Webhook) { w.Headers = l.headers(f) })},
			{name: "redirects", is: redirectsSchema, example: "same-host",
				decode: into(func(l *loader, f entry, w *notify.Webhook) { set(&w.Redirects)(l.redirects(f)) })},
		},
		required: []string{"url"},
	}

	heartbeatBlock := &block{
		doc: "A URL pinged after each run, so that a monitor notices when runs stop.",
		keys: []key{
			{name: "url", doc: "The URL pinged: an http:// or https:// URL.", is: text, example: "https://hc-ping.com/your-uuid",
				decode: into(func(l *loader, f entry, hb *notify.Heartbeat) { set(&hb.URL)(l.url(f)) })},
			{name: "kind", doc: "How the monitor is pinged: healthchecks (URL, or URL/fail with the reason) or uptime_kuma (status=up|down).", is: func() *schema { return oneOfNames(notify.HeartbeatKinds) }, def: string(notify.Healthchecks), example: "uptime_kuma",
				decode: into(func(l *loader, f entry, hb *notify.Heartbeat) { set(&hb.Kind)(oneOf(l, f, notify.HeartbeatKinds)) })},
			{name: "redirects", is: redirectsSchema, example: "same-host",
				decode: into(func(l *loader, f entry, hb *notify.Heartbeat) { set(&hb.Redirects)(l.redirects(f)) })},
		},
		required: []string{"url"},
	}

	// topicPattern is a topic prefix: no wildcards, no leading or trailing /.
	const topicPattern = `[^+#/\x00]([^+#\x00]*[^+#/\x00])?`

	notifyMQTTBlock := &block{
		doc: "Publish each circuit's state over MQTT, with Home Assistant discovery. broker, username and password default to the top-level mqtt: block's.",
		keys: append(append([]key(nil), sharedMQTTKeys...),
			key{name: "prefix", doc: "The topic prefix of the state topics.", is: func() *schema { return textMatching("^" + topicPattern + "$") }, def: "fusebox", example: "fusebox",
				decode: into(func(l *loader, f entry, m *notify.MQTT) { set(&m.Prefix)(l.topic(f, false)) })},
			key{name: "discovery", doc: `Home Assistant's discovery prefix; "" turns discovery off.`, is: func() *schema { return textMatching("^(" + topicPattern + ")?$") }, def: "homeassistant", example: "homeassistant",
				decode: into(func(l *loader, f entry, m *notify.MQTT) { set(&m.Discovery)(l.topic(f, true)) })},
			key{name: "instance", doc: "The name of this host in Home Assistant (default: its host name).", is: func() *schema { s := textMatching(namePattern()); s.Not = &schema{Enum: []any{".", ".."}}; return s }, example: "nas",
				decode: into(func(l *loader, f entry, m *notify.MQTT) { set(&m.Instance)(l.instance(f)) })},
			key{name: "controls", doc: "fusebox serve: also publish a reset button, a trip button and a phase sensor per circuit, and apply their presses (the broker's ACL authorises a press).", is: boolean, def: false, example: true,
				decode: into(func(l *loader, f entry, m *notify.MQTT) { set(&m.Controls)(l.boolean(f.value, f.path)) })},
			key{name: "controls_trip_for", doc: "How long the trip button trips a circuit for.", is: positive, def: formatDuration(notify.DefaultControlsTripFor), example: "1h",
				decode: into(func(l *loader, f entry, m *notify.MQTT) { set(&m.ControlsTripFor)(l.positive(f)) })},
		),
	}

	// The notify: keys are read into a *notify.Rules.
	notifyBlock := &block{
		doc: "Notifications: one message per transition of an outage.",
		keys: []key{
			{name: "after", doc: "Only outages that last this long.", is: duration, example: "10m",
				decode: into(func(l *loader, f entry, r *notify.Rules) { set(&r.After)(l.duration(f.value, f.path)) })},
			{name: "probe_failed", doc: "Notify once more at this failed probe of an outage.", is: func() *schema { return integer(num(1), nil) }, example: 6,
				decode: into(func(l *loader, f entry, r *notify.Rules) {
					set(&r.ProbeFailed)(l.positiveInt(f, "must be at least 1, got %d"))
				})},
			{name: "timeout", doc: "For each message, its one retry included.", is: positive, def: formatDuration(notify.DefaultTimeout), example: "5s",
				decode: into(func(l *loader, f entry, r *notify.Rules) { set(&r.Timeout)(l.positive(f)) })},
			{name: "webhooks", items: webhookBlock,
				decode: into(func(l *loader, f entry, r *notify.Rules) {
					r.Webhooks = urlItems(l, f, "webhooks", webhookBlock, notify.Webhook{Format: notify.JSON})
				})},
			{name: "on_open", doc: "A command run on opened and probe_failed, without a shell.", is: argvSchema, example: []string{"/usr/local/bin/bridge-down", "--loud"},
				decode: into(func(l *loader, f entry, r *notify.Rules) { set(&r.OnOpen)(l.argv(f)) })},
			{name: "on_close", doc: "A command run on closed, without a shell.", is: argvSchema, example: []string{"/usr/local/bin/bridge-up"},
				decode: into(func(l *loader, f entry, r *notify.Rules) { set(&r.OnClose)(l.argv(f)) })},
			{name: "heartbeats", items: heartbeatBlock,
				decode: into(func(l *loader, f entry, r *notify.Rules) {
					r.Heartbeats = urlItems(l, f, "heartbeat URLs", heartbeatBlock, notify.Heartbeat{Kind: notify.Healthchecks})
				})},
			{name: "mqtt", block: notifyMQTTBlock,
				decode: into(func(l *loader, f entry, r *notify.Rules) { r.MQTT = l.mqtt(f, notifyMQTTBlock) })},
		},
	}

	defaultsBlock := policyBlock.with("Policy keys for every circuit, and its notifications.",
		key{name: "notify", block: notifyBlock,
			decode: into(func(l *loader, f entry, r *circuitRead) { r.rules = l.notifyRules(f, r.rules, notifyBlock) })})

	watchBlock := &block{
		doc: "Subscribe to topic on the top-level mqtt: broker and judge each message with up:.",
		keys: []key{
			{name: "topic", doc: "One topic, no wildcards, like zigbee2mqtt/bridge/state.",
				is: func() *schema { return textMatching(`^[^+#$\x00][^+#\x00]*$`) }, example: "zigbee2mqtt/bridge/state",
				decode: into(func(l *loader, f entry, w *watchRead) {
					s, ok := l.watchTopic(f)
					w.Topic, w.good = s, w.good && ok
				})},
			{name: "up", doc: "A jq condition: true closes the circuit, false opens it. A message that is not JSON is read as a JSON string.",
				is: func() *schema { s := text(); s.MinLength = 1; return s }, example: `(.state? // .) == "online"`,
				decode: into(func(l *loader, f entry, w *watchRead) {
					s, ok := l.upCondition(f)
					w.Up, w.good = s, w.good && ok
					src := l.sources(keyRefs{"up": f})["up"]
					w.upAt = &src
				})},
			{name: "settle", doc: "How long a new verdict must hold before it is applied; 0s applies each at once.", is: duration, def: formatDuration(notify.DefaultWatchSettle), example: "2s",
				decode: into(func(l *loader, f entry, w *watchRead) {
					d, ok := l.duration(f.value, f.path)
					w.Settle, w.good = d, w.good && ok
				})},
		},
		required: []string{"topic", "up"},
	}

	circuitHealthBlock := &block{
		doc: "Open and close the circuit from what a topic says (fusebox serve); an HTTP health check goes in http: health:.",
		keys: []key{
			{name: "mqtt", block: watchBlock,
				decode: into(func(l *loader, f entry, r *circuitRead) { r.watch, r.upAt = l.watch(f, r.name, watchBlock) })},
		},
		misplaced: map[string]string{},
	}
	for _, k := range httpHealthBlock.names() {
		circuitHealthBlock.misplaced[k] = fmt.Sprintf("an HTTP health check goes in the circuit's http: block (http: {health: {%s: ...}}); health: here takes mqtt:", k)
	}

	circuitBlock := policyBlock.with("A circuit: the defaults with its own keys over them, field by field.",
		key{name: "fresh", doc: "Answer from the stored response while it is younger than this (needs http:).", is: duration, example: "10m",
			needs: "http", alone: "fresh needs an http: block in the same circuit",
			decode: into(func(l *loader, f entry, r *circuitRead) { set(&r.endpoint.Fresh)(l.duration(f.value, f.path)) })},
		key{name: "health", block: circuitHealthBlock,
			decode: into(func(l *loader, f entry, r *circuitRead) { l.read(f, circuitHealthBlock, r, nil, "") })},
		key{name: "http", block: httpBlock,
			decode: into(func(l *loader, f entry, r *circuitRead) { l.httpEndpoint(f, httpBlock, r) })},
		key{name: "notify", block: notifyBlock,
			decode: into(func(l *loader, f entry, r *circuitRead) { r.rules = l.notifyRules(f, r.rules, notifyBlock) })},
		key{name: "skip_exit", doc: "The exit status of a run skipped because the circuit is open, for a command whose own 75 means something.",
			is: func() *schema { return integer(num(0), num(255)) }, def: 75, example: 99, sourced: true,
			decode: into(func(l *loader, f entry, r *circuitRead) { l.skipExit(f, r) })},
	)

	// A chain's keys are read into its *chainDef.
	chainBlock := &block{
		doc: "A fallback chain: its endpoints in turn.",
		keys: []key{
			{name: "endpoints", doc: "Circuits with an http: block, or other chains (inlined), tried in turn.",
				is: func() *schema { return &schema{Type: "array", Items: text(), MinItems: 1, UniqueItems: true} }, example: []string{"api", "api-backup"}, sourced: true,
				decode: into(func(l *loader, f entry, d *chainDef) { d.names = l.endpointNames(f) })},
			{name: "fresh", doc: "Answer from the stored response while it is younger than this.", is: duration, example: "10m", sourced: true,
				decode: into(func(l *loader, f entry, d *chainDef) { set(&d.chain.Fresh)(l.duration(f.value, f.path)) })},
			{name: "stale", doc: "When every endpoint fails, serve the stored response while it is younger than this; longer than fresh.", is: duration, example: "6h", sourced: true,
				decode: into(func(l *loader, f entry, d *chainDef) { set(&d.chain.Stale)(l.duration(f.value, f.path)) })},
			{name: "deadline", doc: "The longest the whole chain may take (default: the sum of its endpoints').", is: duration, example: "20s", sourced: true,
				decode: into(func(l *loader, f entry, d *chainDef) { set(&d.chain.Deadline)(l.duration(f.value, f.path)) })},
			{name: "hedge", doc: "Start the next endpoint beside one silent this long; shorter than the deadline, in a chain of two or more.", is: positive, example: "300ms", sourced: true,
				decode: into(func(l *loader, f entry, d *chainDef) { set(&d.chain.Hedge)(l.positive(f)); d.hedge = &f })},
		},
		required: []string{"endpoints"},
	}

	// The top-level keys are read into a *topRead, in this order: the
	// broker before the watches that use it, the defaults before the
	// circuits laid over them, the circuits before the chains naming them.
	topBlock := &block{
		doc: "fusebox's config file (fusebox validate checks it).",
		keys: []key{
			{name: "state", doc: "The state directory, relative to the config file's directory, or a redis:// (rediss://) URL to share circuits across hosts.",
				is: func() *schema { s := text(); s.MinLength = 1; return s }, example: "/var/lib/fusebox",
				decode: into(func(l *loader, f entry, t *topRead) { set(&t.c.State)(l.stateDir(f)) })},
			{name: "fsync", doc: "Whether state writes are synced to disk; false spares SD cards a little more.",
				is: boolean, def: true, example: true,
				decode: into(func(l *loader, f entry, t *topRead) { set(&t.c.Fsync)(l.boolean(f.value, f.path)) })},
			{name: "gc_after", doc: "Forget circuits unused this long.",
				is: positive, def: formatDuration(retention.GCAfter), example: "7d",
				decode: into(func(l *loader, f entry, t *topRead) { set(&t.c.GCAfter)(l.positive(f)) })},
			{name: "history", block: historyBlock,
				decode: into(func(l *loader, f entry, t *topRead) { l.read(f, historyBlock, t.c, nil, "") })},
			{name: "mqtt", block: topMQTTBlock,
				decode: into(func(l *loader, f entry, t *topRead) { t.c.MQTT = l.topMQTT(f, topMQTTBlock); l.mqttBase = t.c.MQTT })},
			{name: "defaults", block: defaultsBlock,
				decode: into(func(l *loader, f entry, t *topRead) { l.defaults(f, defaultsBlock, t) })},
			{name: "circuits", doc: "The circuits, by name: letters, digits, '.', '_' and '-'.", each: circuitBlock, example: []string{"api", "api-backup"},
				run:    runReadsItsOwn,
				decode: into(func(l *loader, e entry, t *topRead) { l.namedCircuit(e, circuitBlock, t) })},
			{name: "chains", doc: "Fallback chains of HTTP endpoints, by name; a chain's name is not a circuit's.", each: chainBlock, example: []string{"weather"},
				run:    runSkips,
				decode: into(func(l *loader, e entry, t *topRead) { l.chainDef(e, chainBlock, t) })},
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
