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

// haBinarySensor is Home Assistant's MQTT binary_sensor discovery schema,
// as its documentation gives it (the MQTT binary sensor integration's
// configuration variables, and MQTT discovery's shared keys and
// abbreviations), in the 2026.4 form: object_id is gone, default_entity_id
// took its place. Each key maps to whether it is required.
var haBinarySensor = map[string]bool{
	"availability": false, "availability_mode": false, "availability_template": false, "availability_topic": false,
	"default_entity_id": false, "device": false, "device_class": false, "enabled_by_default": false,
	"encoding": false, "entity_category": false, "entity_picture": false, "expire_after": false,
	"force_update": false, "icon": false, "json_attributes_template": false, "json_attributes_topic": false,
	"name": false, "off_delay": false, "payload_available": false, "payload_not_available": false,
	"payload_off": false, "payload_on": false, "qos": false, "state_topic": true,
	"unique_id": false, "value_template": false,
	// Discovery's own: where the message comes from.
	"origin": false,
}

// haDevice and haOrigin are the keys of the device and origin mappings.
var (
	haDevice = []string{"configuration_url", "connections", "hw_version", "identifiers", "manufacturer", "model",
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
	// in device and origin
	"cu": "configuration_url", "cns": "connections", "hw": "hw_version", "ids": "identifiers", "mf": "manufacturer",
	"mdl": "model", "mdl_id": "model_id", "sn": "serial_number", "sa": "suggested_area", "sw": "sw_version",
	"url": "support_url",
}

// haBinarySensorClasses are the binary_sensor device classes.
var haBinarySensorClasses = []string{"battery", "battery_charging", "carbon_monoxide", "cold", "connectivity", "door",
	"garage_door", "gas", "heat", "light", "lock", "moisture", "motion", "moving", "occupancy", "opening", "plug",
	"power", "presence", "problem", "running", "safety", "smoke", "sound", "tamper", "update", "vibration", "window"}

var (
	// An entity ID: a domain and an object ID of lowercase letters, digits
	// and underscores, no underscore at either end nor two in a row.
	haEntityID = regexp.MustCompile(`^binary_sensor\.[a-z0-9]+(_[a-z0-9]+)*$`)
	// <discovery_prefix>/binary_sensor/[<node_id>/]<object_id>/config
	haDiscoveryTopic = regexp.MustCompile(`^[^+#]+/binary_sensor/([a-zA-Z0-9_-]+/)?[a-zA-Z0-9_-]+/config$`)
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
// topic, Home Assistant's schema does not allow.
func checkBinarySensor(topic string, d map[string]any) []string {
	var bad []string
	if !haDiscoveryTopic.MatchString(topic) {
		bad = append(bad, "topic "+topic+" is not <prefix>/binary_sensor/[<node_id>/]<object_id>/config")
	}
	d = expand(d)
	for k := range d {
		if _, ok := haBinarySensor[k]; !ok {
			bad = append(bad, "unknown key "+k)
		}
	}
	for k, required := range haBinarySensor {
		if _, ok := d[k]; required && !ok {
			bad = append(bad, "no "+k)
		}
	}
	str := func(k string) string { s, _ := d[k].(string); return s }
	if v, ok := d["default_entity_id"]; ok && !haEntityID.MatchString(fmt.Sprint(v)) {
		bad = append(bad, fmt.Sprintf("default_entity_id %v is no binary_sensor entity ID", v))
	}
	if v, ok := d["device_class"]; ok && !slices.Contains(haBinarySensorClasses, fmt.Sprint(v)) {
		bad = append(bad, fmt.Sprintf("device_class %v is no binary_sensor class", v))
	}
	if v, ok := d["entity_category"]; ok && v != "diagnostic" && v != "config" {
		bad = append(bad, fmt.Sprintf("entity_category %v", v))
	}
	if _, ok := d["availability"]; ok && d["availability_topic"] != nil {
		bad = append(bad, "both availability and availability_topic")
	}
	for _, k := range []string{"state_topic", "availability_topic", "json_attributes_topic"} {
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
		"o": map[string]any{"sw": "1"}, "def_ent_id": "sensor.Bridge"}
	got := strings.Join(checkBinarySensor("homeassistant/binary_sensor/fusebox.bridge/config", old), "; ")
	for _, want := range []string{"unknown key object_id", "device_class trouble", "without identifiers",
		"has no name", "default_entity_id sensor.Bridge", "topic homeassistant/binary_sensor/fusebox.bridge/config"} {
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
