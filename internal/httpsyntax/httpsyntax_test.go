package httpsyntax

import "testing"

func TestToken(t *testing.T) {
	for s, want := range map[string]bool{
		"Content-Type": true, "X-Fusebox-Source": true, "GET": true, "a!#$%&'*+-.^_`|~9": true,
		"": false, "Bad Name": false, "a:b": false, "a\tb": false, "é": false, "a\x00": false, `a"b`: false, "a(b)": false,
	} {
		if got := Token(s); got != want {
			t.Errorf("Token(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestFieldValue(t *testing.T) {
	for s, want := range map[string]bool{
		"": true, "text/plain; charset=utf-8": true, "a\tb": true, "ünïcode": true,
		"a\r\nSet-Cookie: x": false, "a\nb": false, "a\x00": false, "a\x7f": false,
	} {
		if got := FieldValue(s); got != want {
			t.Errorf("FieldValue(%q) = %v, want %v", s, got, want)
		}
	}
}
