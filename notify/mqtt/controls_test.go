package mqtt_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/notify"
	"github.com/fusebox-hq/fusebox/notify/mqtt"
)

func asMap(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

// Every name's controls are a reset and a trip button and a phase sensor
// Home Assistant's schemas take, under the binary sensor's device, each
// with its own topic and unique ID, and the buttons press what
// ParseCommand reads back.
func TestEveryNameMakesValidControls(t *testing.T) {
	seen := map[string]string{}
	for _, instance := range []string{"nas", "pi-4.lan"} {
		cfg := notify.MQTT{Prefix: "fusebox", Discovery: "homeassistant", Instance: instance, Controls: true}
		for _, name := range []string{"weather", "Zigbee-2.mqtt", "_x", "a__b", "a_reset", "a", "x.."} {
			topics := mqtt.ControlTopicsOf(cfg, name)
			reset, trip := mqtt.ButtonsOf(cfg, name, origin)
			sensor := mqtt.SensorOf(cfg, name, origin)
			device := mqtt.DiscoveryOf(mqtt.TopicsOf(cfg, name), instance, name, origin).Device
			for _, e := range []struct {
				component, topic, uniqueID string
				v                          any
				dev                        mqtt.Device
			}{
				{"button", topics.Reset, reset.UniqueID, reset, reset.Device},
				{"button", topics.Trip, trip.UniqueID, trip, trip.Device},
				{"sensor", topics.Sensor, sensor.UniqueID, sensor, sensor.Device},
			} {
				if bad := checkEntity(e.component, e.topic, asMap(t, e.v)); len(bad) > 0 {
					t.Errorf("%s %s on %s: %s", e.component, name, instance, strings.Join(bad, "; "))
				}
				if !slices.Equal(e.dev.Identifiers, device.Identifiers) {
					t.Errorf("%s of %s is on device %q, the binary sensor on %q", e.topic, name, e.dev.Identifiers, device.Identifiers)
				}
				for _, id := range []string{"topic " + e.topic, "unique_id " + e.uniqueID} {
					if other, ok := seen[id]; ok {
						t.Errorf("%s of %s on %s is also %s's", id, name, instance, other)
					}
					seen[id] = name + " on " + instance
				}
			}
			for _, b := range []struct {
				button mqtt.Button
				want   mqtt.Press
			}{{reset, mqtt.PressReset}, {trip, mqtt.PressTrip}} {
				c, err := mqtt.ParseCommand([]byte(b.button.PayloadPress))
				if err != nil || c != (mqtt.Command{Circuit: name, Press: b.want}) {
					t.Errorf("%s's press %s reads as %+v, %v", b.button.Name, b.button.PayloadPress, c, err)
				}
				if b.button.CommandTopic != mqtt.CommandTopic(cfg) {
					t.Errorf("%s presses on %s, the daemon listens on %s", b.button.Name, b.button.CommandTopic, mqtt.CommandTopic(cfg))
				}
			}
		}
	}
}

// The check can fail for a button and a sensor too.
func TestTheSchemaCheckRefusesBadControls(t *testing.T) {
	got := strings.Join(checkEntity("button", "homeassistant/sensor/x/config", map[string]any{"name": "x", "state_topic": "a", "def_ent_id": "sensor.x"}), "; ")
	for _, want := range []string{"no command_topic", "unknown key state_topic", "is not <prefix>/button/", "no button entity ID"} {
		if !strings.Contains(got, want) {
			t.Errorf("the button check does not say %q: %s", want, got)
		}
	}
	got = strings.Join(checkEntity("sensor", "homeassistant/sensor/x/config", map[string]any{"stat_t": "a", "dev_cla": "enum", "unit_of_meas": "s"}), "; ")
	if !strings.Contains(got, "an enum sensor without options") {
		t.Errorf("the sensor check passes an enum without options: %s", got)
	}
}

func TestParseCommand(t *testing.T) {
	for _, c := range []struct {
		payload string
		want    mqtt.Command
	}{
		{`{"circuit":"weather","press":"reset"}`, mqtt.Command{Circuit: "weather", Press: mqtt.PressReset}},
		{` {"press":"trip","circuit":"a.b"} `, mqtt.Command{Circuit: "a.b", Press: mqtt.PressTrip}},
	} {
		if got, err := mqtt.ParseCommand([]byte(c.payload)); err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.payload, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "PRESS", "reset weather", `{"circuit":"weather"}`, `{"circuit":"weather","press":"open"}`,
		`{"circuit":"../x","press":"reset"}`, `{"circuit":"w","press":"reset","by":"me"}`, `{"circuit":"w","press":"reset"}{}`,
		`{"circuit":"` + strings.Repeat("w", 600) + `","press":"reset"}`} {
		if c, err := mqtt.ParseCommand([]byte(bad)); !errors.Is(err, mqtt.ErrMalformed) {
			t.Errorf("%.40q reads as %+v, %v; want ErrMalformed", bad, c, err)
		}
	}
}

func FuzzParseCommand(f *testing.F) {
	f.Add([]byte(`{"circuit":"weather","press":"reset"}`))
	f.Add([]byte(`{"circuit":"w","press":"trip"} x`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		c, err := mqtt.ParseCommand(payload)
		if err != nil {
			if !errors.Is(err, mqtt.ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if len(payload) > mqtt.MaxCommand || fusebox.ValidateName(c.Circuit) != nil || (c.Press != mqtt.PressReset && c.Press != mqtt.PressTrip) {
			t.Fatalf("%q read as %+v", payload, c)
		}
	})
}

func TestAPressAsksATripForControlsTripForOrAReset(t *testing.T) {
	for _, c := range []struct {
		name  string
		press mqtt.Press
		cfg   notify.MQTT
		want  time.Duration
	}{
		{"reset", mqtt.PressReset, notify.MQTT{ControlsTripFor: 10 * time.Minute}, 0},
		{"trip, controls_trip_for unset", mqtt.PressTrip, notify.MQTT{}, notify.DefaultControlsTripFor},
		{"trip, controls_trip_for: 10m", mqtt.PressTrip, notify.MQTT{ControlsTripFor: 10 * time.Minute}, 10 * time.Minute},
	} {
		if got := (mqtt.Command{Circuit: "weather", Press: c.press}).TripFor(c.cfg); got != c.want {
			t.Errorf("%s: TripFor = %s, want %s", c.name, got, c.want)
		}
	}
}

func TestPhaseOf(t *testing.T) {
	for p, want := range map[breaker.Phase]string{breaker.Closed: "closed", breaker.Open: "open", breaker.HalfOpen: "half-open", breaker.ForcedOpen: "tripped", "": "closed"} {
		if got := mqtt.PhaseOf(p); got != want {
			t.Errorf("PhaseOf(%q) = %q, want %q", p, got, want)
		}
	}
}
