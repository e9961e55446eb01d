package config

import (
	"strings"
	"testing"
)

// A command that uses only some circuits' values (status, history, trip,
// reset, gc) is not stopped by a reference another circuit makes that this
// process cannot expand; it is by one written wrong, by one outside
// circuits:, and by one in a circuit it uses.
func TestAReferenceThisProcessCannotExpandCostsOnlyWhatUsesIt(t *testing.T) {
	env := testEnv(nil, nil)
	for _, tc := range []struct {
		name, yaml string
		uses       []string
		want       string // "" when it loads
	}{
		{"an unset variable in another circuit", "circuits:\n  ha:\n    http: {url: 'http://h/?t=${UNSET}'}\n  nas: {attempts: 2}\n", []string{"nas"}, ""},
		{"an unreadable file in another circuit", "circuits:\n  ha:\n    http: {url: 'http://h/', body: '${file:/nonexistent}'}\n  nas: {attempts: 2}\n", []string{}, ""},
		{"an unset variable in a circuit used", "circuits:\n  ha:\n    http: {url: 'http://h/?t=${UNSET}'}\n", []string{"ha"}, "circuits.ha.http.url: ${UNSET}: environment variable UNSET is not set"},
		{"an unset variable in a notify rule used", "circuits:\n  ha:\n    notify: {webhooks: [{url: 'http://h/${UNSET}'}]}\n", []string{"ha"}, "UNSET is not set"},
		{"an unset variable outside circuits:", "state: ${UNSET}\ncircuits:\n  nas: {attempts: 2}\n", []string{"nas"}, "state: ${UNSET}"},
		{"a reference written wrong in another circuit", "circuits:\n  ha:\n    http: {url: 'http://h/?t=${1X}'}\n", []string{}, "not a variable name"},
		{"another key wrong in another circuit", "circuits:\n  ha:\n    atempts: 2\n", []string{}, "did you mean attempts?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := parse("config.yaml", []byte(tc.yaml), env, scope{uses: tc.uses})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("err = %v, want none", err)
			case tc.want == "" && (c.Circuits["ha"] == nil || c.Policy("nas").Retry.Attempts != 2):
				t.Errorf("circuits %v: want ha listed and nas's own policy", c.Circuits)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("err = %v, want %q", err, tc.want)
			}
			if _, err := Parse("config.yaml", []byte(tc.yaml), env); err == nil && tc.want == "" {
				t.Error("Parse of the whole (validate's) found no problem")
			}
		})
	}
}
