package file

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
)

// writtenStates are states as Update writes them: every field, escapes
// MarshalIndent makes (<, >, &, U+2028, control characters), times in UTC
// and with an offset, probes.
func writtenStates() []fusebox.State {
	wall := time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.UTC)
	at := fusebox.Instant{Wall: wall, Boot: "1c120db4-b2c0-4e15-94db-62bc5f0b9df5", BootTime: 18294171095780}
	return []fusebox.State{
		{},
		{Name: "db", Phase: fusebox.Closed},
		{Name: "db", Phase: fusebox.Closed, ConsecutiveFailures: 2, FailingSince: wall, Recent: "ssfsf",
			LastFailureAt: wall, LastFailure: "exit status 7: curl: (7) Failed to connect to zigbee.lan port 8080 <&> \"quoted\" \\ é ☃ \u2028\t\x01", UpdatedAt: wall},
		{Name: "db", Phase: fusebox.Open, Generation: 18446744073709551615, ConsecutiveFailures: 5,
			OpenedAt: at, OpenPeriod: fusebox.Duration(30 * time.Second), OpenUntil: wall.Add(30 * time.Second), Reopens: 3, UpdatedAt: wall},
		{Name: "db", Phase: fusebox.Open, OpenedAt: fusebox.Instant{Wall: wall.In(time.FixedZone("", -7*3600))},
			Probes: []fusebox.Lease{{ID: "p1", Granted: at, For: fusebox.Duration(12 * time.Second)}, {ID: "p2", Granted: fusebox.Instant{Wall: wall}}}},
		{Name: "garage-door", Phase: fusebox.ForcedOpen, Generation: 1, OpenedAt: at, UpdatedAt: wall},
		{Name: "db", Phase: fusebox.ForcedOpen, OpenedAt: at, OpenPeriod: fusebox.Duration(240 * time.Hour), OpenUntil: wall.Add(240 * time.Hour), ConsecutiveFailures: -1},
	}
}

// compareDecoders fails t when decodeState decodes b and encoding/json does
// not, or to anything else.
func compareDecoders(t *testing.T, b []byte) (decoded bool) {
	t.Helper()
	got, ok := decodeState(b)
	if !ok {
		return false
	}
	var want fusebox.State
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("decodeState took %q, which encoding/json refuses: %v", b, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeState(%q)\n= %#v\nencoding/json:\n  %#v", b, got, want)
	}
	return true
}

func TestDecodeStateTakesWhatUpdateWrites(t *testing.T) {
	for _, st := range writtenStates() {
		b, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if !compareDecoders(t, append(b, '\n')) {
			t.Errorf("decodeState refused a state file Update writes:\n%s", b)
		}
	}
}

func TestDecodeStateLeavesTheRestToEncodingJSON(t *testing.T) {
	for _, doc := range []string{
		``, `null`, `[]`, `"x"`, `{`, `{"name":"db"`, `{"name":"db"}x`, `{"name":"db"}{}`,
		`{"name":"db","name":"other"}`, // given twice: encoding/json keeps the last
		`{"Name":"db"}`,                // another spelling: encoding/json folds case
		`{"total_successes":3}`,        // a key of older versions
		`{"name":null}`,                // null
		`{"generation":1.0}`, `{"generation":1e3}`, `{"generation":-1}`, `{"generation":01}`,
		`{"generation":18446744073709551616}`,          // overflows
		`{"consecutive_failures":9223372036854775808}`, // overflows
		`{"name":"\ud83d\ude00"}`,                      // a surrogate pair
		"{\"name\":\"\xff\"}",                          // invalid UTF-8
		"{\"name\":\"a\x01\"}",                         // a raw control character
		`{"name":"\x"}`,                                // no such escape
		`{"open_period":"30"}`, `{"open_period":1.5}`,  // no unit; a fraction
		`{"updated_at":"2030-01-02"}`,                // not RFC 3339
		`{"updated_at":"2030-01-02T03:04:05\u005a"}`, // an escape time.Time does not read
		`{"opened_at":{"wall":"2030-01-02T03:04:05Z","wall":"2030-01-02T03:04:05Z"}}`,
		`{"probes":null}`, `{"probes":[{"id":"a"},]}`, `{"probes":[{"for":"1s","x":1}]}`,
		`{"name":"db",}`, `{,}`, `{"name" "db"}`,
	} {
		if compareDecoders(t, []byte(doc)) {
			t.Errorf("decodeState took %q: it should leave it to encoding/json", doc)
		}
	}
}

// FuzzDecodeState: whatever decodeState takes, encoding/json decodes to the
// same State.
func FuzzDecodeState(f *testing.F) {
	for _, st := range writtenStates() {
		b, _ := json.MarshalIndent(st, "", "  ")
		f.Add(b)
		b, _ = json.Marshal(st)
		f.Add(b)
	}
	f.Add([]byte(`{"name":"d\u00e9\n","open_period":-5,"probes":[],"opened_at":{}}`))
	f.Add([]byte(`{"generation":0,"consecutive_failures":-0,"reopens":7}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		compareDecoders(t, b)
	})
}
