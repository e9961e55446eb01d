package fusebox_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fusebox-hq/fusebox"
)

func TestClipReason(t *testing.T) {
	for _, c := range []struct{ name, in string }{
		{"short", "exit status 1"},
		{"exactly the bound", strings.Repeat("a", fusebox.MaxReason)},
		{"one byte over", strings.Repeat("a", fusebox.MaxReason+1)},
		{"5 MB", strings.Repeat("x", 5<<20)},
		{"cut inside a character", strings.Repeat("é", fusebox.MaxReason)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := fusebox.ClipReason(c.in)
			switch {
			case len(got) > fusebox.MaxReason:
				t.Fatalf("%d bytes, want at most %d", len(got), fusebox.MaxReason)
			case !utf8.ValidString(got):
				t.Fatalf("%q is not valid UTF-8", got)
			case len(c.in) <= fusebox.MaxReason && got != c.in:
				t.Fatalf("a reason within the bound changed: %q", got)
			case len(c.in) > fusebox.MaxReason && (!strings.HasSuffix(got, "…") || !strings.HasPrefix(c.in, strings.TrimSuffix(got, "…"))):
				t.Fatalf("%q is not a prefix of the reason and an ellipsis", got)
			}
		})
	}
}
