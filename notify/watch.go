package notify

import (
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/httpcall"
)

// Watch is a circuit's health: mqtt: block: fusebox serve subscribes to
// Topic on Broker (through package mqtt's connections) and judges each
// message with the jq condition Up, opening the circuit when it is false
// and closing it when it is true. It lives here, beside MQTT, so that the
// daemon and config share it without importing the MQTT client.
type Watch struct {
	Circuit string
	Topic   string
	Up      httpcall.JQ // a jq condition; a message that is not JSON is read as a JSON string
	// Settle is how long a new verdict must hold before it is applied
	// (settle:, default DefaultWatchSettle; 0 applies each at once): a topic
	// that flaps faster changes nothing until it stops.
	Settle time.Duration
	// Broker is the top-level mqtt: block, as the notify: mqtt: of a
	// circuit that names the same broker and credentials has it (so that
	// the daemon holds one connection), else with notify's defaults.
	Broker MQTT
	Policy fusebox.Policy // the circuit's: how long a down verdict opens it (open_max)
}

// DefaultWatchSettle is a watch's settle: when it sets none: long enough that a
// publisher flapping a topic opens and closes nothing, short enough that
// a bridge going offline skips the next cron run.
const DefaultWatchSettle = 2 * time.Second
