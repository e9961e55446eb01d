package notify

import (
	"time"

	"github.com/fusebox-hq/fusebox/redirect"

	"github.com/fusebox-hq/fusebox"
)

// Rules say when to notify about one circuit and where to.
type Rules struct {
	// After is the outage's minimum duration: a transition earlier in an
	// outage sends nothing, and the first transition at or past it sends
	// Opened (so a blip that heals before After is never announced, and its
	// closing neither).
	After time.Duration
	// ProbeFailed, when set, sends ProbeFailed once, at the outage's
	// ProbeFailed-th failed probe (after Opened was sent).
	ProbeFailed int
	// Timeout bounds the delivery of one message, a retry included
	// (default DefaultTimeout).
	Timeout time.Duration

	Webhooks []Webhook
	OnOpen   []string // a command run on Opened and ProbeFailed: argv, no shell
	OnClose  []string // a command run on Closed
	// Heartbeats are pinged after each run of the circuit (Ping).
	Heartbeats []Heartbeat
	MQTT       *MQTT
}

// DefaultTimeout bounds a message's delivery when Rules.Timeout is zero.
const DefaultTimeout = 5 * time.Second

// Empty reports whether r sends nothing on a transition.
func (r Rules) Empty() bool {
	return len(r.Webhooks) == 0 && len(r.OnOpen) == 0 && len(r.OnClose) == 0 && r.MQTT == nil
}

// TimeoutOrDefault is r.Timeout, or DefaultTimeout when zero.
func (r Rules) TimeoutOrDefault() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return DefaultTimeout
}

// MQTT is where circuit state is published (see notify/mqtt).
type MQTT struct {
	Broker   string // tcp://host:port or mqtt://host:port
	Username string
	Password string
	// Prefix starts every state topic (default "fusebox"); Discovery is
	// Home Assistant's discovery prefix (default "homeassistant", "" never
	// after defaults).
	Prefix    string
	Discovery string
	// Instance names this host in Home Assistant's unique IDs, so that two
	// hosts with a circuit of the same name make two entities; "" is the
	// host name (ValidInstance says what it may hold).
	Instance string
	// Controls has the daemon also publish, per circuit, Home Assistant
	// buttons that reset it and trip it for ControlsTripFor (default
	// DefaultControlsTripFor) and a sensor of its phase, and apply their
	// presses: whoever the broker lets publish on the command topic may
	// press them (see notify/mqtt).
	Controls        bool
	ControlsTripFor time.Duration
}

// DefaultControlsTripFor is how long the trip button trips a circuit when
// controls_trip_for: is not set.
const DefaultControlsTripFor = time.Hour

// TripFor is m.ControlsTripFor, or DefaultControlsTripFor when zero.
func (m MQTT) TripFor() time.Duration {
	if m.ControlsTripFor > 0 {
		return m.ControlsTripFor
	}
	return DefaultControlsTripFor
}

// ValidInstance reports whether s can be an MQTT.Instance: 1 to 64
// letters, digits, '.', '_' and '-', as a circuit's name.
func ValidInstance(s string) bool {
	return fusebox.ValidateName(s) == nil
}

// Format is the shape of a webhook's request.
type Format string

// The webhook formats.
const (
	// JSON POSTs the message as a JSON object (WebhookBody).
	JSON Format = "json"
	// Ntfy POSTs the text to an ntfy topic URL, with Title, Priority and
	// Tags headers.
	Ntfy Format = "ntfy"
	// Gotify POSTs {"title","message","priority"} to a Gotify server's
	// /message URL (the app token in ?token= or an X-Gotify-Key header).
	Gotify Format = "gotify"
	// HomeAssistant POSTs the JSON object to a webhook trigger
	// (/api/webhook/ID): an automation reads it as trigger.json.
	HomeAssistant Format = "homeassistant"
)

// Formats lists the webhook formats, for config errors.
var Formats = []Format{JSON, Ntfy, Gotify, HomeAssistant}

// Webhook is one HTTP destination.
type Webhook struct {
	URL       string
	Format    Format // default JSON
	Headers   map[string]string
	Redirects redirect.Policy // which redirects are followed; "" is redirect.SameHost
}

// HeartbeatKind is the protocol of a heartbeat URL.
type HeartbeatKind string

// The heartbeat kinds.
const (
	// Healthchecks is healthchecks.io's ping protocol (also self-hosted
	// Healthchecks): GET URL after a good run, POST URL/fail with the
	// reason after a failed one.
	Healthchecks HeartbeatKind = "healthchecks"
	// UptimeKuma is an Uptime Kuma push monitor's URL: GET it with
	// status=up or status=down and msg.
	UptimeKuma HeartbeatKind = "uptime_kuma"
)

// HeartbeatKinds lists the heartbeat kinds, for config errors.
var HeartbeatKinds = []HeartbeatKind{Healthchecks, UptimeKuma}

// Heartbeat is a URL pinged after each run of a circuit, so that a monitor
// notices when runs stop coming, or fail.
type Heartbeat struct {
	URL       string
	Kind      HeartbeatKind   // default Healthchecks
	Redirects redirect.Policy // which redirects are followed; "" is redirect.SameHost
}
