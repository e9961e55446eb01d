package httpcall

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzJSONDepth: jsonDepth refuses exactly what encoding/json would refuse
// for depth, so a body it lets through is never reported too deep later,
// and one it refuses would not have decoded.
func FuzzJSONDepth(f *testing.F) {
	for _, s := range []string{`{}`, `[[1,[2]],{"a":{"b":[]}}]`, `"[[[["`, `"\"[["`, strings.Repeat("[", 10001) + strings.Repeat("]", 10001), `{"a":"\\"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, _ := jsonShape(b, maxJSONDepth)
		var v any
		err := json.Unmarshal(b, &v)
		if d > maxJSONDepth && err == nil {
			t.Fatalf("jsonDepth %d refuses what encoding/json decodes: %q", d, b)
		}
		if d <= maxJSONDepth && err != nil && strings.Contains(err.Error(), "exceeded max depth") {
			t.Fatalf("jsonDepth %d lets through what is too deep: %v", d, err)
		}
	})
}
