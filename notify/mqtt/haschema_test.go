package mqtt_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/notify"
	"github.com/fusebox-hq/fusebox/notify/mqtt"
)

// haSchemas are Home Assistant's MQTT discovery schemas of the entities
// fusebox publishes, as its MQTT integration defines them (the
// integration's binary_sensor, button and sensor platforms, the keys every
// entity shares, and discovery's abbreviations), in the 2026.4 form:
// object_id is gone, default_entity_id took its place. Each key maps to
// whether it is required.
var haSchemas = map[string]map[string]bool{
	"binary_sensor": withCommon(map[string]bool{
		"device_class": false, "expire_after": false, "force_update": false, "off_delay": false,
		"payload_off": false, "payload_on": false, "state_topic": true, "value_template": false,
	}),
	"button": withCommon(map[string]bool{
		"command_template": false, "command_topic": true, "device_class": false, "payload_press": false, "retain": false,
	}),
	"sensor": withCommon(map[string]bool{
		"device_class": false, "expire_after": false, "force_update": false, "last_reset_value_template": false,
		"options": false, "state_class": false, "state_topic": true, "suggested_display_precision": false,
		"unit_of_measurement": false, "value_template": false,
	}),
}

// withCommon adds the keys every MQTT entity takes to keys.
func withCommon(keys map[string]bool) map[string]bool {
	for _, k := range []string{"availability", "availability_mode", "availability_template", "availability_topic",
		"default_entity_id", "device", "enabled_by_default", "encoding", "entity_category", "entity_picture", "icon",
		"json_attributes_template", "json_attributes_topic", "name", "payload_available", "payload_not_available",
		"qos", "unique_id",
		"origin", // discovery's own: where the message comes from
	} {
		keys[k] = false
	}
	return keys
}

// haDevice, haOrigin and haAvailability are the keys of the device and
// origin mappings and of an availability list's items.
var (
	haAvailability = []string{"topic", "payload_available", "payload_not_available", "value_template"}
	haDevice       = []string{"configuration_url", "connections", "hw_version", "identifiers", "manufacturer", "model",
		"model_id", "name", "serial_number", "suggested_area", "sw_version", "via_device"}
	haOrigin = map[string]bool{"name": true, "sw_version": false, "support_url": false}
)

// haAbbreviations are the short forms discovery accepts for those keys.
var haAbbreviations = map[string]string{
	"avty": "availability", "avty_mode": "availability_mode", "avty_tpl": "availability_template",
	"avty_t": "availability_topic", "def_ent_id": "default_entity_id", "dev": "device", "dev_cla": "device_class",
	"en": "enabled_by_default", "e": "encoding", "ent_cat": "entity_category", "ent_pic": "entity_picture",
	"exp_aft": "expire_after", "frc_upd": "force_update", "ic": "icon", "json_attr_tpl": "json_attributes_template",
	"json_attr_t": "json_attributes_topic", "off_dly": "off_delay", "pl_avail": "payload_available",
	"pl_not_avail": "payload_not_available", "pl_off": "payload_off", "pl_on": "payload_on",
	"stat_t": "state_topic", "uniq_id": "unique_id", "val_tpl": "value_template", "o": "origin",
	"cmd_t": "command_topic", "cmd_tpl": "command_template", "pl_prs": "payload_press", "ret": "retain",
	"ops": "options", "stat_cla": "state_class", "unit_of_meas": "unit_of_measurement",
	"sug_dsp_prc": "suggested_display_precision", "lrst_val_tpl": "last_reset_value_template",
	// in device and origin
	"cu": "configuration_url", "cns": "connections", "hw": "hw_version", "ids": "identifiers", "mf": "manufacturer",
	"mdl": "model", "mdl_id": "model_id", "sn": "serial_number", "sa": "suggested_area", "sw": "sw_version",
	"url": "support_url",
	// in availability
	"t": "topic",
}

// haDeviceClasses are each component's device classes (the sensor's
// that take no unit: fusebox's is enum).
var haDeviceClasses = map[string][]string{
	"binary_sensor": {"battery", "battery_charging", "carbon_monoxide", "cold", "connectivity", "door",
		"garage_door", "gas", "heat", "light", "lock", "moisture", "motion", "moving", "occupancy", "opening", "plug",
		"power", "presence", "problem", "running", "safety", "smoke", "sound", "tamper", "update", "vibration", "window"},
	"button": {"identify", "restart", "update"},
	"sensor": {"date", "enum", "timestamp"},
}

var (
	// An object ID: lowercase letters, digits and underscores, no
	// underscore at either end nor two in a row; an entity ID is a domain
	// and one.
	haObjectID = `[a-z0-9]+(_[a-z0-9]+)*`
	// <discovery_prefix>/<component>/[<node_id>/]<object_id>/config
	haDiscoveryTopic = `^[^+#]+/%s/([a-zA-Z0-9_-]+/)?[a-zA-Z0-9_-]+/config$`
)

func expand(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if full, ok := haAbbreviations[k]; ok {
			k = full
		}
		if sub, ok := v.(map[string]any); ok {
			v = expand(sub)
		}
		out[k] = v
	}
	return out
}

// checkBinarySensor returns what in the discovery config d, published at
// topic, Home Assistant's binary_sensor schema does not allow.
func checkBinarySensor(topic string, d map[string]any) []string {
	return checkEntity("binary_sensor", topic, d)
}

// checkEntity returns what in the discovery config d of a component
// (binary_sensor, button, sensor), published at topic, Home Assistant's
// schema does not allow.
func checkEntity(component, topic string, d map[string]any) []string {
	var bad []string
	if !regexp.MustCompile(fmt.Sprintf(haDiscoveryTopic, component)).MatchString(topic) {
		bad = append(bad, "topic "+topic+" is not <prefix>/"+component+"/[<node_id>/]<object_id>/config")
	}
	schema := haSchemas[component]
	d = expand(d)
	for k := range d {
		if _, ok := schema[k]; !ok {
			bad = append(bad, "unknown key "+k)
		}
	}
	for k, required := range schema {
		if _, ok := d[k]; required && !ok {
			bad = append(bad, "no "+k)
		}
	}
	str := func(k string) string { s, _ := d[k].(string); return s }
	if v, ok := d["default_entity_id"]; ok && !regexp.MustCompile(`^`+component+`\.`+haObjectID+`$`).MatchString(fmt.Sprint(v)) {
		bad = append(bad, fmt.Sprintf("default_entity_id %v is no %s entity ID", v, component))
	}
	if v, ok := d["device_class"]; ok && !slices.Contains(haDeviceClasses[component], fmt.Sprint(v)) {
		bad = append(bad, fmt.Sprintf("device_class %v is no %s class", v, component))
	}
	// Only an enum sensor takes options, a list of one or more, and then
	// neither a state class nor a unit.
	if v, ok := d["options"]; ok {
		opts, _ := v.([]any)
		if d["device_class"] != "enum" || len(opts) == 0 || d["state_class"] != nil || d["unit_of_measurement"] != nil {
			bad = append(bad, fmt.Sprintf("options %v without device_class enum, or empty, or with a state class or unit", v))
		}
	} else if d["device_class"] == "enum" {
		bad = append(bad, "an enum sensor without options")
	}
	if v, ok := d["entity_category"]; ok && v != "diagnostic" && v != "config" {
		bad = append(bad, fmt.Sprintf("entity_category %v", v))
	}
	if _, ok := d["availability"]; ok && d["availability_topic"] != nil {
		bad = append(bad, "both availability and availability_topic")
	}
	if v, ok := d["availability"]; ok {
		list, _ := v.([]any)
		if len(list) == 0 {
			bad = append(bad, fmt.Sprintf("availability %v is no list of topics", v))
		}
		for _, a := range list {
			m, _ := a.(map[string]any)
			for k := range expand(m) {
				if !slices.Contains(haAvailability, k) {
					bad = append(bad, "unknown availability key "+k)
				}
			}
			if topic, _ := expand(m)["topic"].(string); topic == "" || strings.ContainsAny(topic, "+#") {
				bad = append(bad, fmt.Sprintf("availability %v without a topic", a))
			}
		}
	}
	if v, ok := d["availability_mode"]; ok && v != "all" && v != "any" && v != "latest" {
		bad = append(bad, fmt.Sprintf("availability_mode %v", v))
	}
	for _, k := range []string{"state_topic", "command_topic", "availability_topic", "json_attributes_topic"} {
		if v, ok := d[k]; ok && (str(k) == "" || strings.ContainsAny(str(k), "+#")) {
			bad = append(bad, fmt.Sprintf("%s %v is no topic", k, v))
		}
	}
	if dev, ok := d["device"].(map[string]any); ok {
		if d["unique_id"] == nil {
			bad = append(bad, "a device without unique_id")
		}
		for k := range dev {
			if !slices.Contains(haDevice, k) {
				bad = append(bad, "unknown device key "+k)
			}
		}
		ids, _ := dev["identifiers"].([]any)
		if len(ids) == 0 && dev["connections"] == nil {
			bad = append(bad, "a device without identifiers or connections")
		}
	}
	if v, ok := d["origin"]; ok {
		o, _ := v.(map[string]any)
		for k := range o {
			if _, ok := haOrigin[k]; !ok {
				bad = append(bad, "unknown origin key "+k)
			}
		}
		if s, _ := o["name"].(string); s == "" {
			bad = append(bad, fmt.Sprintf("origin %v has no name", v))
		}
	}
	return bad
}

// The check can fail: it refuses object_id, which Home Assistant no longer
// honours, and each other breach of the schema.
func TestTheSchemaCheckRefusesWhatHomeAssistantNoLongerTakes(t *testing.T) {
	old := map[string]any{"name": "bridge", "unique_id": "fusebox_bridge", "object_id": "fusebox_bridge",
		"device_class": "trouble", "state_topic": "fusebox/bridge/state", "device": map[string]any{"name": "fusebox"},
		"o": map[string]any{"sw": "1"}, "def_ent_id": "sensor.Bridge",
		"avty": []any{map[string]any{"pl_avail": "up", "qos": 1}}, "avty_mode": "some"}
	got := strings.Join(checkBinarySensor("homeassistant/binary_sensor/fusebox.bridge/config", old), "; ")
	for _, want := range []string{"unknown key object_id", "device_class trouble", "without identifiers",
		"has no name", "default_entity_id sensor.Bridge", "topic homeassistant/binary_sensor/fusebox.bridge/config",
		"without a topic", "unknown availability key qos", "availability_mode some"} {
		if !strings.Contains(got, want) {
			t.Errorf("the check does not say %q: %s", want, got)
		}
	}
	if bad := checkBinarySensor("homeassistant/binary_sensor/x/config", map[string]any{"name": "x"}); !slices.Contains(bad, "no state_topic") {
		t.Errorf("a config without state_topic passes: %q", bad)
	}
}

// Every circuit name makes a config Home Assistant takes, and two hosts
// with a circuit of the same name make two entities on two devices.
func TestEveryNameMakesAValidDiscoveryConfig(t *testing.T) {
	seen := map[string]string{}
	for _, instance := range []string{"nas", "pi-4.lan"} {
		for _, name := range []string{"weather", "Zigbee-2.mqtt", "_x", "a__b", "9", "-", "x.."} {
			cfg := notify.MQTT{Prefix: "fusebox", Discovery: "homeassistant", Instance: instance}
			topics := mqtt.TopicsOf(cfg, name)
			d := mqtt.DiscoveryOf(topics, instance, name, origin)
			b, _ := json.Marshal(d)
			var m map[string]any
			json.Unmarshal(b, &m)
			if bad := checkBinarySensor(topics.Discovery, m); len(bad) > 0 {
				t.Errorf("%s on %s: %s\n%s", name, instance, strings.Join(bad, "; "), b)
			}
			held, _ := json.Marshal(d.HeldBy(mqtt.ServeTopic(cfg)))
			m = nil
			json.Unmarshal(held, &m)
			if bad := checkBinarySensor(topics.Discovery, m); len(bad) > 0 {
				t.Errorf("%s on %s, as the daemon publishes it: %s\n%s", name, instance, strings.Join(bad, "; "), held)
			}
			for _, id := range []string{"topic " + topics.Discovery, "unique_id " + d.UniqueID} {
				if other, ok := seen[id]; ok {
					t.Errorf("%s of %s on %s is also %s's", id, name, instance, other)
				}
				seen[id] = name + " on " + instance
			}
		}
	}
	nas := mqtt.DiscoveryOf(mqtt.Topics{}, "nas", "weather", origin).Device.Identifiers
	pi := mqtt.DiscoveryOf(mqtt.Topics{}, "pi-4.lan", "weather", origin).Device.Identifiers
	if slices.Equal(nas, pi) {
		t.Errorf("two hosts share the device %q", nas)
	}
}
