package mqtt_test

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/notify"
	"github.com/fusebox-hq/fusebox/notify/mqtt"
)

// genName draws a circuit name, from an alphabet small enough that names
// differing only in '.' against '_' come up often.
func genName(t *rapid.T, label string) string {
	name := rapid.StringMatching(`[ab._-]{1,8}`).Draw(t, label)
	if fusebox.ValidateName(name) != nil {
		t.Skip("not a circuit name")
	}
	return name
}

// nearName draws a name like of: often of itself with a '.' and a '_'
// swapped, the pair a sanitised ID would merge.
func nearName(t *rapid.T, label, of string) string {
	if !rapid.Bool().Draw(t, label+" is near") {
		return genName(t, label)
	}
	b := []byte(of)
	for _, i := range rapid.SliceOfN(rapid.IntRange(0, len(b)-1), 1, 4).Draw(t, label+" swaps") {
		switch b[i] {
		case '.':
			b[i] = '_'
		case '_':
			b[i] = '.'
		}
	}
	if fusebox.ValidateName(string(b)) != nil {
		t.Skip("not a circuit name")
	}
	return string(b)
}

// Two names never share a topic, discovery's included, on one instance or
// across two; a name without '.' keeps the discovery topic it always had,
// so that its Home Assistant entity is not renamed.
func TestDistinctNamesGetDistinctTopics(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, ia := genName(t, "a"), genName(t, "instance a")
		b, ib := nearName(t, "b", a), nearName(t, "instance b", ia)
		if a == b && ia == ib {
			t.Skip("the same circuit")
		}
		ta := mqtt.TopicsOf(notify.MQTT{Prefix: "fusebox", Discovery: "homeassistant", Instance: ia}, a)
		tb := mqtt.TopicsOf(notify.MQTT{Prefix: "fusebox", Discovery: "homeassistant", Instance: ib}, b)
		if ta.Discovery == tb.Discovery {
			t.Fatalf("%s on %s and %s on %s share the discovery topic %s", a, ia, b, ib, ta.Discovery)
		}
		if ia == ib && (ta.State == tb.State || ta.Attributes == tb.Attributes || ta.Availability == tb.Availability) {
			t.Fatalf("%s and %s share a state topic: %+v, %+v", a, b, ta, tb)
		}
		if !strings.Contains(a+ia, ".") {
			if want := "homeassistant/binary_sensor/fusebox_" + ia + "/circuit_" + a + "/config"; ta.Discovery != want {
				t.Fatalf("%s on %s moved to %s from %s", a, ia, ta.Discovery, want)
			}
		}
	})
}
