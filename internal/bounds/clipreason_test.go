package bounds_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fusebox-hq/fusebox/internal/bounds"
)

func TestClipReason(t *testing.T) {
	for _, c := range []struct{ name, in string }{
		{"short", "exit status 1"},
		{"exactly the bound", strings.Repeat("a", bounds.MaxReason)},
		{"one byte over", strings.Repeat("a", bounds.MaxReason+1)},
		{"5 MB", strings.Repeat("x", 5<<20)},
		{"cut inside a character", strings.Repeat("é", bounds.MaxReason)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := bounds.ClipReason(c.in)
			switch {
			case len(got) > bounds.MaxReason:
				t.Fatalf("%d bytes, want at most %d", len(got), bounds.MaxReason)
			case !utf8.ValidString(got):
				t.Fatalf("%q is not valid UTF-8", got)
			case len(c.in) <= bounds.MaxReason && got != c.in:
				t.Fatalf("a reason within the bound changed: %q", got)
			case len(c.in) > bounds.MaxReason && (!strings.HasSuffix(got, "…") || !strings.HasPrefix(c.in, strings.TrimSuffix(got, "…"))):
				t.Fatalf("%q is not a prefix of the reason and an ellipsis", got)
			}
		})
	}
}
