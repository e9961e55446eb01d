package runner

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzLastLine: however a command's stderr arrives in writes, the line a
// failure quotes is the same, one printable line of valid UTF-8 within the
// cap, and every byte passes through.
func FuzzLastLine(f *testing.F) {
	f.Add([]byte("curl: (7) Failed to connect\n"), uint8(3))
	f.Add([]byte("a\r\nb\x1b[0m\n\n  \n"), uint8(1))
	f.Add([]byte(strings.Repeat("é", 150)), uint8(7))
	f.Fuzz(func(t *testing.T, b []byte, chunk uint8) {
		whole := &lastLine{}
		whole.Write(b)
		var through strings.Builder
		parts := &lastLine{w: &through}
		n := int(chunk%16) + 1
		for i := 0; i < len(b); i += n {
			parts.Write(b[i:min(i+n, len(b))])
		}
		got := parts.line()
		if got != whole.line() {
			t.Fatalf("in writes of %d: %q, at once: %q", n, got, whole.line())
		}
		if through.String() != string(b) {
			t.Fatal("stderr did not pass through intact")
		}
		if !utf8.ValidString(got) || len(got) > lastLineMax+len("…") || strings.ContainsFunc(got, unicode.IsControl) {
			t.Fatalf("line %q: want valid UTF-8, printable, within %d bytes", got, lastLineMax)
		}
	})
}
