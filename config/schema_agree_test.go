package config

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/fusebox-hq/fusebox/internal/human"
	"pgregory.net/rapid"
)

// validate is what fusebox validate does with the config text data: Load
// it from a file, beside a secrets.yaml.
func validate(t *testing.T, data string) error {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secrets.yaml"), []byte("token: s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	return err
}

// TestSchemaRefusesWhatValidateRefuses: each of a sample of configs that
// fusebox validate refuses, the schema refuses too; so an editor flags it
// while it is being written.
func TestSchemaRefusesWhatValidateRefuses(t *testing.T) {
	const url = "circuits:\n  a:\n    http:\n      url: https://x\n"
	for _, tt := range []struct{ name, yaml string }{
		// unknown keys, at every level
		{"unknown top-level key", "stat: /x\n"},
		{"unknown key in defaults", "defaults: {atempts: 3}\n"},
		{"fresh is not a defaults key", "defaults: {fresh: 1m}\n"},
		{"unknown key in a circuit", "circuits: {z2m: {open_fr: 3m}}\n"},
		{"unknown key in http", url + "      header: {A: b}\n"},
		{"unknown key in expect", url + "      expect: {code: [200]}\n"},
		{"unknown key in failure_rate", "defaults: {failure_rate: {threshold: 50%, windows: 20}}\n"},
		{"unknown key in retry_budget", "defaults: {retry_budget: {percent: 10%, max: 3}}\n"},
		{"unknown key in a chain", url + "chains: {w: {endpoints: [a], fallback: 1m}}\n"},
		{"unknown key in notify", "defaults: {notify: {on_opened: [/bin/x]}}\n"},
		{"unknown key in a webhook", "defaults: {notify: {webhooks: [{url: https://n, fromat: ntfy}]}}\n"},
		{"unknown key in a heartbeat", "defaults: {notify: {heartbeats: [{url: https://n, type: uptime_kuma}]}}\n"},
		{"unknown key in notify mqtt", "defaults: {notify: {mqtt: {broker: 'tcp://h:1883', retain: true}}}\n"},
		{"unknown key in the top-level mqtt", "mqtt: {broker: 'tcp://h:1883', prefix: x}\n"},
		{"unknown key in history", "history: {keep: 30d, max: 100}\n"},
		{"an HTTP health check in a circuit's health", "circuits: {a: {health: {path: /x}}}\n"},
		{"unknown key in an http health check", url + "      health: {every: 30s}\n"},

		// wrong types
		{"a word for a number", "defaults: {attempts: three}\n"},
		{"quoted number for attempts", "defaults: {attempts: '3'}\n"},
		{"text for a boolean", "fsync: 'yes'\n"},
		{"a list for circuits", "circuits: [a, b]\n"},
		{"a list for headers", url + "      headers: [a]\n"},
		{"a scalar for retry_on", url + "      retry_on: connect\n"},
		{"a scalar for expect status", url + "      expect: {status: 200}\n"},
		{"a scalar for endpoints", url + "chains: {w: {endpoints: a}}\n"},
		{"a string for on_open", "defaults: {notify: {on_open: /bin/x}}\n"},
		{"a fraction for max_in_flight", url + "      max_in_flight: 1.5\n"},
		{"text for multiplier", "defaults: {multiplier: double}\n"},
		{"a mapping for a duration", "defaults: {timeout: {s: 5}}\n"},
		{"null for a duration", "defaults: {timeout:}\n"},
		{"a list for failure_rate", "defaults: {failure_rate: [50%]}\n"},

		// durations
		{"a duration in words", "defaults: {backoff: 5 minutes}\n"},
		{"a duration without a unit", "defaults: {timeout: 30}\n"},
		{"an unknown unit", "defaults: {deadline: 2w}\n"},
		{"a negative duration", "defaults: {backoff: -5s}\n"},
		{"open_for neither a duration nor auto", "defaults: {open_for: soon}\n"},
		{"gc_after of 0", "gc_after: 0s\n"},
		{"history kept 0", "history: {keep: 0}\n"},
		{"a hedge of 0", url + "chains: {w: {endpoints: [a], hedge: 0ms}}\n"},
		{"a notify timeout of 0", "defaults: {notify: {timeout: 0s}}\n"},
		{"a health interval of 0", url + "      health: {interval: 0s}\n"},

		// enums
		{"unknown jitter", "defaults: {jitter: fulll}\n"},
		{"jitter in capitals", "defaults: {jitter: Full}\n"},
		{"unknown redirect policy", url + "      redirects: always\n"},
		{"unknown method", url + "      method: FETCH\n"},
		{"unknown webhook format", "defaults: {notify: {webhooks: [{url: https://n, format: slack}]}}\n"},
		{"unknown heartbeat kind", "defaults: {notify: {heartbeats: [{url: https://n, kind: cronitor}]}}\n"},
		{"unknown failure to retry", url + "      retry_on: [connect, dns]\n"},

		// sizes and shares
		{"a size in lower case", url + "      max_body: 10mb\n"},
		{"a size of 0", url + "      max_body: 0\n"},
		{"a size with a fraction", url + "      max_body: 1.5MiB\n"},
		{"a bare number above 1 for a share", "defaults: {failure_rate: {threshold: 50, window: 20}}\n"},
		{"a share in words", "defaults: {retry_budget: half}\n"},
		{"a share without %", "defaults: {failure_rate: {threshold: '50', window: 20}}\n"},

		// ranges
		{"attempts of 0", "defaults: {attempts: 0}\n"},
		{"a negative trip_after", "defaults: {trip_after: -1}\n"},
		{"a multiplier below 1", "defaults: {multiplier: 0.5}\n"},
		{"a failure rate window of 0", "defaults: {failure_rate: {threshold: 50%, window: 0}}\n"},
		{"a retry budget min of 0", "defaults: {retry_budget: {percent: 10%, min: 0}}\n"},
		{"skip_exit above 255", "circuits: {a: {skip_exit: 300}}\n"},
		{"a status code out of range", url + "      expect: {status: [700]}\n"},
		{"a status code to retry out of range", url + "      retry_on: [99]\n"},
		{"probe_failed of 0", "defaults: {notify: {probe_failed: 0}}\n"},
		{"max_in_flight of 0", url + "      max_in_flight: 0\n"},

		// names, topics and headers
		{"a circuit name with a space", "circuits: {'a b': {}}\n"},
		{"a circuit named ..", "circuits: {'..': {}}\n"},
		{"a chain name too long", "chains: {" + strings.Repeat("c", 65) + ": {endpoints: [a]}}\n"},
		{"an instance with a space", "defaults: {notify: {mqtt: {broker: 'tcp://h:1883', instance: my host}}}\n"},
		{"a prefix with a leading slash", "defaults: {notify: {mqtt: {broker: 'tcp://h:1883', prefix: /fusebox}}}\n"},
		{"a prefix with a wildcard", "defaults: {notify: {mqtt: {broker: 'tcp://h:1883', prefix: 'fusebox/#'}}}\n"},
		{"an empty prefix", "defaults: {notify: {mqtt: {broker: 'tcp://h:1883', prefix: ''}}}\n"},
		{"a watched topic with a wildcard", "mqtt: {broker: 'tcp://h:1883'}\ncircuits: {z: {health: {mqtt: {topic: 'z2m/+/state', up: '.'}}}}\n"},
		{"a header name with a space", url + "      headers: {'X Token': a}\n"},
		{"a header value with a line break", url + "      headers: {X-Token: \"a\\nb\"}\n"},

		// what is required
		{"http without url", "circuits: {a: {http: {method: GET}}}\n"},
		{"a webhook without url", "defaults: {notify: {webhooks: [{format: ntfy}]}}\n"},
		{"a heartbeat without url", "defaults: {notify: {heartbeats: [{kind: uptime_kuma}]}}\n"},
		{"a chain without endpoints", url + "chains: {w: {fresh: 1m}}\n"},
		{"a chain of no endpoints", url + "chains: {w: {endpoints: []}}\n"},
		{"an endpoint listed twice", url + "chains: {w: {endpoints: [a, a]}}\n"},
		{"a top-level mqtt without broker", "mqtt: {username: u}\n"},
		{"a watch without up", "mqtt: {broker: 'tcp://h:1883'}\ncircuits: {z: {health: {mqtt: {topic: z2m/bridge/state}}}}\n"},
		{"a retry budget without percent", "defaults: {retry_budget: {min: 3}}\n"},
		{"fresh without http", "circuits: {a: {fresh: 1m}}\n"},
		{"an empty command", "defaults: {notify: {on_open: []}}\n"},
		{"a command with no program", "defaults: {notify: {on_close: ['', x]}}\n"},
		{"an empty state dir", "state: ''\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := validate(t, tt.yaml); err == nil {
				t.Fatalf("fusebox validate takes it: a case for the other table\n%s", tt.yaml)
			}
			if err := checkSchema(t, []byte(tt.yaml)); err == nil {
				t.Errorf("fusebox validate refuses it, the schema does not:\n%s", tt.yaml)
			}
		})
	}
}

// schemaTakes are configs in each form the loader reads that a schema
// could get wrong.
var schemaTakes = func() []struct{ name, yaml string } {
	const url = "circuits:\n  a:\n    http:\n      url: https://x\n"
	return []struct{ name, yaml string }{
		{"an empty file", ""},
		{"a circuit with no keys", "circuits: {a: }\n"},
		{"a duration of 0", "defaults: {backoff: 0, timeout: 0s, max_delay: 0}\n"},
		{"durations in days and fractions", "gc_after: 1.5d\nhistory: {keep: 1d12h}\ndefaults: {deadline: .5m, probe_lease: 1.s}\n"},
		{"a duration written in µs", "defaults: {backoff: 500µs}\n"},
		{"a duration in quotes with space", "defaults: {backoff: ' 2s '}\n"},
		{"a duration as a block of text", "defaults:\n  backoff: |\n    2s\n"},
		{"a negative duration that is 0", "defaults: {backoff: -0s}\n"},
		{"open_for auto", "defaults: {open_for: auto}\n"},
		{"a method in lower case", url + "      method: post\n"},
		{"a size as a number", url + "      max_body: 1048576\n"},
		{"a size with a space and a unit", url + "      max_body: 512 KB\n"},
		{"a retry budget as a share", "defaults: {retry_budget: 20%}\n"},
		{"a retry budget as a fraction", "defaults: {retry_budget: 0.2}\n"},
		{"a retry budget turned off", "defaults: {retry_budget: null}\ncircuits: {a: {failure_rate: null}}\n"},
		{"a threshold as a fraction", "defaults: {failure_rate: {threshold: 0.5, window: 20}}\n"},
		{"a threshold with spaces", "defaults: {failure_rate: {threshold: ' 50 %', window: 20}}\n"},
		{"status codes to retry as numbers and text", url + "      retry_on: [502, '503', 5xx]\n"},
		{"discovery turned off", "defaults: {notify: {mqtt: {broker: 'tcp://h:1883', discovery: ''}}}\n"},
		{"text values written as numbers", "mqtt: {broker: 'tcp://h:1883', username: 1234, password: 5678}\n"},
		{"a secret", url + "      headers: {X-Token: !secret token}\n"},
		{"anchors and merge keys", "defaults: &d {attempts: 2}\ncircuits:\n  a: {<<: *d, open_for: 1m}\n"},
		{"multipliers of 0 (the default)", "defaults: {multiplier: 0, open_multiplier: 0}\n"},
		{"names with dots and dashes", "circuits: {esp32.garage-door_1: {}}\n"},
	}
}()

// TestSchemaTakesWhatValidateTakes: each of schemaTakes, which fusebox
// validate takes, matches the schema.
func TestSchemaTakesWhatValidateTakes(t *testing.T) {
	for _, tt := range schemaTakes {
		t.Run(tt.name, func(t *testing.T) {
			if err := validate(t, tt.yaml); err != nil {
				t.Fatalf("fusebox validate refuses it: a case for the other table\n%v", err)
			}
			if err := checkSchema(t, []byte(tt.yaml)); err != nil {
				t.Errorf("fusebox validate takes it, the schema does not: %v\n%s", err, tt.yaml)
			}
		})
	}
}

// FuzzSchemaTakesWhatParseTakes: the schema never flags a config the loader
// reads without a problem.
func FuzzSchemaTakesWhatParseTakes(f *testing.F) {
	ref, err := os.ReadFile("testdata/reference.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ref)
	f.Add([]byte("defaults: {backoff: ' 2s', open_for: ' auto', retry_budget: {percent: 0x1p-2%, window: 1.5d}}\n"))
	f.Add([]byte("circuits:\n  a: {fresh: 1m, http: {url: https://x, method: pOsT, max_body: 10 KiB, retry_on: [502]}}\n"))
	f.Add([]byte("defaults: {notify: {mqtt: {broker: 'tcp://h:1883', discovery: '', instance: 1.5}}}\n"))
	for _, tt := range schemaTakes {
		f.Add([]byte(tt.yaml))
	}
	env := testEnv(
		map[string]string{"OWM_API_KEY": "k", "X": "x"},
		map[string]string{"/run/secrets/ha_token": "t\n", "testdata/secrets.yaml": "wttr_token: s\ndir: /d\n"})
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := Parse("testdata/reference.yaml", data, env); err != nil {
			return
		}
		if err := checkSchema(t, data); err != nil {
			t.Errorf("Parse takes it, the schema does not: %v\n%q", err, data)
		}
	})
}

// The patterns take what the loader's parsers take, over strings of the
// characters that matter to them.

func TestDurationPatternIsParseDuration(t *testing.T) {
	re := regexp.MustCompile(durationPattern())
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(
			rapid.StringMatching(`[ \t\x{a0}]?[+-]?([0-9]{0,3}\.?[0-9]{0,3}(ns|us|µs|μs|ms|s|m|h|d|x)?){1,3}[ \t]?`),
			rapid.StringOfN(rapid.SampledFrom([]rune("0123456789.+- \t\u00a0dhmsnuµ")), 0, 12, -1),
		).Draw(t, "s")
		_, err := human.ParseDuration(strings.TrimSpace(s))
		if re.MatchString(s) != (err == nil) && !overflows(s) && !negative(s) {
			t.Fatalf("%q: pattern matches %v, ParseDuration's error %v", s, re.MatchString(s), err)
		}
	})
}

// overflows reports whether s holds a number long enough to overflow a
// duration, which a pattern cannot tell.
func overflows(s string) bool { return regexp.MustCompile(`[0-9]{5}`).MatchString(s) }

// negative reports whether s is a negative duration the schema lets
// through and ParseDuration refuses: under one of each unit, but not 0.
func negative(s string) bool {
	_, err := human.ParseDuration(strings.TrimSpace(s))
	return strings.HasPrefix(strings.TrimSpace(s), "-") && err != nil && strings.Contains(err.Error(), "negative")
}

func TestSizePatternIsParseSize(t *testing.T) {
	re := regexp.MustCompile(sizePattern())
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(
			rapid.StringMatching(`[ +-]?0?[0-9]{0,4} {0,2}(KiB|MiB|GiB|KB|MB|GB|B|kB|iB)? ?`),
			rapid.StringOfN(rapid.SampledFrom([]rune("0123456789+- KMGiB")), 0, 10, -1),
		).Draw(t, "s")
		n, err := parseSize(s)
		if ok := err == nil && n > 0; re.MatchString(s) != ok {
			t.Fatalf("%q: pattern matches %v, parseSize %d, %v", s, re.MatchString(s), n, err)
		}
	})
}

// TestPercentPatternIsParseFloat: the pattern of a percentage is what
// threshold reads: a number strconv.ParseFloat reads, space around it, then
// %.
func TestPercentPatternIsParseFloat(t *testing.T) {
	re := regexp.MustCompile(percentPattern())
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(
			rapid.StringMatching(`[ \t]?[+-]?(0x)?[0-9a-f_]{0,3}\.?[0-9]{0,3}([eEp][+-]?[0-9]{1,2})?[ \t]?%?`),
			rapid.StringOfN(rapid.SampledFrom([]rune("0123456789.eE+-xp_a %\t")), 0, 10, -1),
		).Draw(t, "s")
		num, pct := strings.CutSuffix(s, "%")
		_, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if reads := pct && !errors.Is(err, strconv.ErrSyntax); re.MatchString(s) != reads {
			t.Fatalf("%q: pattern matches %v, ParseFloat %v", s, re.MatchString(s), err)
		}
	})
}

func TestSpaceIsTrimSpace(t *testing.T) {
	in := map[rune]bool{}
	for _, r := range strings.TrimSuffix(strings.TrimPrefix(space(), "["), "]") {
		in[r] = true
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if trimmed := strings.TrimSpace(string(r)) == ""; in[r] != trimmed {
			t.Errorf("%U: in the pattern's space %v, trimmed by strings.TrimSpace %v", r, in[r], trimmed)
		}
	}
	if !regexp.MustCompile("^" + space() + "+$").MatchString(" \t\u00a0\u3000") {
		t.Errorf("%q is not a character class of space", space())
	}
}

func TestMethodPatternIsToUpper(t *testing.T) {
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if u := unicode.ToUpper(r); u < 0x80 && upperToASCII(u) != string(r) {
			t.Errorf("unicode.ToUpper(%q) is %q, which upperToASCII lacks", r, u)
		}
	}
	re := regexp.MustCompile(anyCase(methods))
	for _, m := range []string{"get", "Post", "pUt", "poſt", "optıons"} {
		if !re.MatchString(m) {
			t.Errorf("%q does not match %s", m, re)
		}
	}
}
