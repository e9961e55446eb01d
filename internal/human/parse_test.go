package human_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/human"
)

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"0", "30s", "1h30m", "7d", "1d12h", "1.5d", "-1d", "106751d", "1e3s", ".5d", "1d.", "µs", "1dµs"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := human.ParseDuration(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("human.ParseDuration(%q) = %v, negative", s, d)
		}
		if !strings.Contains(s, "d") {
			if want, err := time.ParseDuration(s); err != nil || want != d {
				t.Errorf("human.ParseDuration(%q) = %v; time.ParseDuration gives %v, %v", s, d, want, err)
			}
		}
		if back, err := human.ParseDuration(d.String()); err != nil || back != d {
			t.Errorf("human.ParseDuration(%q) = %v, but %q gives %v, %v", s, d, d.String(), back, err)
		}
	})
}
