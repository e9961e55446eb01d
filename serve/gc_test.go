package serve_test

import (
	"runtime/debug"
	"testing"

	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/serve"
)

// gcPercent reads the garbage collector's target without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

func TestServingSetsTheGCTargetUnlessGOGCIsSet(t *testing.T) {
	before := gcPercent()
	for _, c := range []struct {
		name, gogc string
		want       int
	}{
		{"no GOGC: 400 while serving", "", 400},
		{"GOGC set: the process's own", "150", before},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GOGC", c.gogc)
			t.Run("serving", func(t *testing.T) {
				u := newUpstream(t, "u")
				d := start(t, config.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL)}}, serve.Options{})
				if r := d.get(t, "/call/u"); r.code != 200 { // Serve is serving
					t.Fatalf("call: %d %s", r.code, r.body)
				}
				if got := gcPercent(); got != c.want {
					t.Errorf("GC target while serving = %d, want %d", got, c.want)
				}
			})
			if got := gcPercent(); got != before {
				t.Errorf("GC target after serving = %d, want %d as before", got, before)
			}
		})
	}
}
