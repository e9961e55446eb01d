package mqtt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/notify"
)

// Controls (notify: mqtt: {controls: true}) add, per circuit and under
// the device of its binary_sensor, two Home Assistant buttons, one that
// resets the circuit and one that trips it for the config's TripFor, and
// a sensor of its phase with its reason, open-until time and failures as
// attributes. A button's press is a message on the instance's command
// topic (CommandTopic) naming the circuit; the daemon applies it as
// `fusebox reset` and `fusebox trip --for` do. Whoever the broker lets
// publish there may press: its ACL is what authorises a press.

// The phases the sensor shows, its enum's options.
const (
	PhaseClosed   = "closed"
	PhaseOpen     = "open"
	PhaseHalfOpen = "half-open"
	PhaseTripped  = "tripped"
)

var phaseOptions = []string{PhaseClosed, PhaseOpen, PhaseHalfOpen, PhaseTripped}

// PhaseOf is how the sensor names p.
func PhaseOf(p breaker.Phase) string {
	switch p {
	case breaker.Open:
		return PhaseOpen
	case breaker.HalfOpen:
		return PhaseHalfOpen
	case breaker.ForcedOpen:
		return PhaseTripped
	}
	return PhaseClosed
}

// Press is what a button asks for.
type Press string

// The presses.
const (
	PressReset Press = "reset"
	PressTrip  Press = "trip"
)

// Command is the payload of a press on the command topic, as JSON:
// {"circuit":"weather","press":"reset"}.
type Command struct {
	Circuit string `json:"circuit"`
	Press   Press  `json:"press"`
}

// MaxCommand bounds a command's payload: a longer one is malformed, unread.
const MaxCommand = 512

// ErrMalformed is the error of a payload that is no Command.
var ErrMalformed = errors.New("not a fusebox command")

// ParseCommand reads a command's payload: one JSON object of a valid
// circuit name and a known press, nothing else, at most MaxCommand bytes.
func ParseCommand(payload []byte) (Command, error) {
	if len(payload) > MaxCommand {
		return Command{}, fmt.Errorf("%w: %d bytes, more than %d", ErrMalformed, len(payload), MaxCommand)
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	var c Command
	if err := dec.Decode(&c); err != nil {
		return Command{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if dec.More() {
		return Command{}, fmt.Errorf("%w: more than one JSON value", ErrMalformed)
	}
	if err := fusebox.ValidateName(c.Circuit); err != nil {
		return Command{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if c.Press != PressReset && c.Press != PressTrip {
		return Command{}, fmt.Errorf("%w: press %q is neither %q nor %q", ErrMalformed, c.Press, PressReset, PressTrip)
	}
	return c, nil
}

// TripFor is what the press asks of the circuit, pressed on cfg's broker:
// a trip for cfg.TripFor(), or 0, a reset.
func (c Command) TripFor(cfg notify.MQTT) time.Duration {
	if c.Press == PressReset {
		return 0
	}
	return cfg.TripFor()
}

func (c Command) payload() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// CommandTopic is where the buttons of cfg's instance publish their
// presses, and the daemon listens.
func CommandTopic(cfg notify.MQTT) string {
	return cfg.Prefix + "/serve/" + InstanceOf(cfg) + "/command"
}

// ControlTopics are where one circuit's controls go.
type ControlTopics struct {
	Phase, PhaseAttributes string
	// The discovery topics of the reset and trip buttons and of the phase
	// sensor; "" without discovery.
	Reset, Trip, Sensor string
}

// ControlTopicsOf returns the controls' topics of circuit under cfg.
func ControlTopicsOf(cfg notify.MQTT, circuit string) ControlTopics {
	base := cfg.Prefix + "/" + circuit
	t := ControlTopics{Phase: base + "/phase", PhaseAttributes: base + "/phase/attributes"}
	if cfg.Discovery != "" {
		// objectID never holds "_r" or "_t" from an escape, so its
		// suffixes keep two circuits' buttons apart.
		at := func(component, suffix string) string {
			return cfg.Discovery + "/" + component + "/" + nodeID(InstanceOf(cfg)) + "/" + objectID(circuit) + suffix + "/config"
		}
		t.Reset, t.Trip, t.Sensor = at("button", "_reset"), at("button", "_trip"), at("sensor", "")
	}
	return t
}

// Button is the discovery config of a Home Assistant MQTT button.
type Button struct {
	Name                string `json:"name"`
	UniqueID            string `json:"unique_id"`
	DefaultEntityID     string `json:"default_entity_id"`
	Icon                string `json:"icon,omitempty"`
	CommandTopic        string `json:"command_topic"`
	PayloadPress        string `json:"payload_press"`
	QoS                 int    `json:"qos"`
	AvailabilityTopic   string `json:"availability_topic"`
	PayloadAvailable    string `json:"payload_available"`
	PayloadNotAvailable string `json:"payload_not_available"`
	Device              Device `json:"device"`
	Origin              Origin `json:"origin"`
}

// Sensor is the discovery config of the phase sensor: a Home Assistant
// MQTT sensor of device_class enum.
type Sensor struct {
	Name                string   `json:"name"`
	UniqueID            string   `json:"unique_id"`
	DefaultEntityID     string   `json:"default_entity_id"`
	Icon                string   `json:"icon,omitempty"`
	DeviceClass         string   `json:"device_class"`
	Options             []string `json:"options"`
	StateTopic          string   `json:"state_topic"`
	JSONAttributesTopic string   `json:"json_attributes_topic"`
	AvailabilityTopic   string   `json:"availability_topic"`
	PayloadAvailable    string   `json:"payload_available"`
	PayloadNotAvailable string   `json:"payload_not_available"`
	Device              Device   `json:"device"`
	Origin              Origin   `json:"origin"`
}

// ButtonsOf returns the discovery configs of circuit's reset and trip
// buttons on cfg's instance. They are available while the daemon is
// (ServeTopic): only a running daemon applies a press.
func ButtonsOf(cfg notify.MQTT, circuit string, o Origin) (reset, trip Button) {
	instance := InstanceOf(cfg)
	button := func(p Press, name, icon string) Button {
		return Button{
			Name: name, UniqueID: "fusebox:" + instance + ":" + circuit + ":" + string(p),
			DefaultEntityID: "button." + entityID("fusebox_"+circuit+"_"+string(p)), Icon: icon,
			CommandTopic: CommandTopic(cfg), PayloadPress: Command{Circuit: circuit, Press: p}.payload(), QoS: 1,
			AvailabilityTopic: ServeTopic(cfg), PayloadAvailable: Online, PayloadNotAvailable: Offline,
			Device: deviceOf(instance, o), Origin: o,
		}
	}
	return button(PressReset, circuit+" reset", "mdi:restore"),
		button(PressTrip, circuit+" trip", "mdi:pause-octagon")
}

// SensorOf returns the discovery config of circuit's phase sensor.
func SensorOf(cfg notify.MQTT, circuit string, o Origin) Sensor {
	instance := InstanceOf(cfg)
	t := ControlTopicsOf(cfg, circuit)
	return Sensor{
		Name: circuit + " phase", UniqueID: "fusebox:" + instance + ":" + circuit + ":phase",
		DefaultEntityID: "sensor." + entityID("fusebox_"+circuit+"_phase"), Icon: "mdi:electric-switch",
		DeviceClass: "enum", Options: phaseOptions, StateTopic: t.Phase, JSONAttributesTopic: t.PhaseAttributes,
		AvailabilityTopic: ServeTopic(cfg), PayloadAvailable: Online, PayloadNotAvailable: Offline,
		Device: deviceOf(instance, o), Origin: o,
	}
}

// Status is what the phase sensor shows of a circuit: its phase as state,
// the rest as attributes.
type Status struct {
	Phase         string    `json:"-"`
	Reason        string    `json:"reason,omitempty"` // of the circuit's last transition
	OpenUntil     time.Time `json:"open_until,omitzero"`
	Failures      int       `json:"failures"` // consecutive
	LastFailure   string    `json:"last_failure,omitempty"`
	LastFailureAt time.Time `json:"last_failure_at,omitzero"`
}

// StatusOf is the status of st at now, reason being its last transition's.
func StatusOf(st breaker.State, now breaker.Instant, reason string) Status {
	v := st.View(now)
	return Status{Phase: PhaseOf(v.Phase), Reason: reason, OpenUntil: v.OpenUntil,
		Failures: st.ConsecutiveFailures, LastFailure: st.LastFailure, LastFailureAt: st.LastFailureAt}
}

// controls returns the messages that publish circuit's controls and
// status s: the discovery configs, then attributes, then the phase.
func (p publisher) controls(circuit string, s Status) []*paho.Publish {
	t := ControlTopicsOf(p.cfg, circuit)
	var msgs []*paho.Publish
	if t.Sensor != "" {
		reset, trip := ButtonsOf(p.cfg, circuit, p.origin)
		for _, d := range []struct {
			topic string
			v     any
		}{{t.Reset, reset}, {t.Trip, trip}, {t.Sensor, SensorOf(p.cfg, circuit, p.origin)}} {
			b, _ := json.Marshal(d.v)
			msgs = append(msgs, retained(d.topic, b))
		}
	}
	attrs, _ := json.Marshal(s)
	return append(msgs, retained(t.PhaseAttributes, attrs), retained(t.Phase, []byte(s.Phase)))
}
