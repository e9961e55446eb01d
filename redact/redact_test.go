package redact_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fusebox-hq/fusebox/redact"
)

func TestString(t *testing.T) {
	r := redact.New("s3cr3t-value", "abc", "", "hunter2!")
	tests := []struct {
		name, in, want string
	}{
		{"known secret", "token is s3cr3t-value here", "token is REDACTED here"},
		{"adjacent secrets merge", "s3cr3t-values3cr3t-value!", "REDACTED!"},
		{"overlapping secrets merge", "xhunter2!s3cr3t-value", "xREDACTED"},
		{"short secret ignored", "abc abc", "abc abc"},
		{"query-escaped secret", "p=hunter2%21", "p=REDACTED"},
		{"appid param", "GET https://api.example/weather?q=Paris&appid=0123456789abcdef", "GET https://api.example/weather?q=Paris&appid=REDACTED"},
		{"several params", "?token=a1&key=b2&x=3", "?token=REDACTED&key=REDACTED&x=3"},
		{"prefixed param", "refresh_token=xyz&client_secret=zzz&x-api-key=kkk", "refresh_token=REDACTED&client_secret=REDACTED&x-api-key=REDACTED"},
		{"param inside slog text", `url="http://h/x?api_key=abc123" status=200`, `url="http://h/x?api_key=REDACTED" status=200`},
		{"harmless param kept", "?q=Paris&units=metric&monkey=banana", "?q=Paris&units=metric&monkey=banana"},
		{"password param", "login?user=bob&password=pa55&passwd=p2", "login?user=bob&password=REDACTED&passwd=REDACTED"},
		{"authorization header", "Authorization: Bearer eyJhbGciOi.abc.def", "Authorization: Bearer REDACTED"},
		{"authorization without scheme", "authorization: sk_live_123", "authorization: REDACTED"},
		{"bearer alone", "sent bearer abc.def-ghi", "sent bearer REDACTED"},
		{"basic alone", "header Basic dXNlcjpwYXNz", "header Basic REDACTED"},
		{"header-like", "X-Api-Key: 9f8e7d", "X-Api-Key: REDACTED"},
		{"struct text", "{Host:h Token:t0k}", "{Host:h Token:REDACTED}"},
		{"json key", `{"access_token": "abc\"def", "ok": 1}`, `{"access_token": "REDACTED", "ok": 1}`},
		{"userinfo", "https://bob:pa55word@nas.local/share", "https://bob:REDACTED@nas.local/share"},
		{"plain text", "connection refused", "connection refused"},
		{"punctuation after a value", "url ?appid=abc: bad; token=t.k.n. done", "url ?appid=REDACTED: bad; token=REDACTED. done"},
		{"punctuation inside a value", "?appid=abc:def,ghi", "?appid=REDACTED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.String(tt.in); got != tt.want {
				t.Errorf("String(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestNilRedactorHidesCredentialLookingValues(t *testing.T) {
	var r *redact.Redactor
	if got := r.String("x?token=abc"); got != "x?token=REDACTED" {
		t.Errorf("got %q", got)
	}
}

func TestSecretMadeOfMarkerAndTextIsHidden(t *testing.T) {
	// Replacing "SECRETZ" would leave "abcREDACTED", which holds "abcREDA".
	r := redact.New("abcREDA", "SECRETZ")
	got := r.String("xx abcSECRETZ yy")
	for _, s := range []string{"abcREDA", "SECRETZ"} {
		if strings.Contains(got, s) {
			t.Errorf("String left %q in %q", s, got)
		}
	}
}

func TestWithAddsSecrets(t *testing.T) {
	base := redact.New("first-secret")
	more := base.With("second-secret")
	if got := more.String("first-secret second-secret"); got != "REDACTED REDACTED" {
		t.Errorf("With: got %q", got)
	}
	if got := base.String("second-secret"); got != "second-secret" {
		t.Errorf("With changed the base Redactor: got %q", got)
	}
}

func TestURL(t *testing.T) {
	r := redact.New("123456:AAH")
	tests := []struct{ in, want string }{
		{"https://api.telegram.org/bot123456:AAH/sendMessage?chat_id=5", "https://api.telegram.org/botREDACTED/sendMessage?chat_id=5"},
		{"http://user:pw@ha.local:8123/api/states?token=abc&x=1", "http://user:REDACTED@ha.local:8123/api/states?token=REDACTED&x=1"},
		{"http://h/?X-Amz-Signature=ff00&a=b", "http://h/?X-Amz-Signature=REDACTED&a=b"},
		{"http://h/%zz?appid=abc", "http://h/%zz?appid=REDACTED"},
	}
	for _, tt := range tests {
		if got := r.URL(tt.in); got != tt.want {
			t.Errorf("URL(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

func TestArgs(t *testing.T) {
	r := redact.New("canary-token-1")
	in := []string{"curl", "-H", "Authorization: Bearer abc", "--token", "t0k", "--password=pw", "-u", "bob:pw", "--api-key", "k", "--verbose", "https://h/?appid=x", "canary-token-1", "--name", "n"}
	want := []string{"curl", "-H", "Authorization: Bearer REDACTED", "--token", "REDACTED", "--password=REDACTED", "-u", "bob:REDACTED", "--api-key", "REDACTED", "--verbose", "https://h/?appid=REDACTED", "REDACTED", "--name", "n"}
	got := r.Args(in)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Args\n got %q\nwant %q", got, want)
	}
	if in[4] != "t0k" {
		t.Error("Args changed its argument")
	}
}

type secretStringer struct{}

func (secretStringer) String() string { return "stringer canary-9876" }

type config struct {
	Host  string
	Token string
}

func TestHandler(t *testing.T) {
	const canary = "canary-9876"
	r := redact.New(canary)
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			var h slog.Handler = slog.NewTextHandler(&buf, nil)
			if format == "json" {
				h = slog.NewJSONHandler(&buf, nil)
			}
			log := slog.New(r.Handler(h)).With("url", "http://h/?appid="+canary).WithGroup("g")
			log.Info("calling "+canary,
				"err", fmt.Errorf("dial: %w", errors.New("refused "+canary)),
				"stringer", secretStringer{},
				"bytes", []byte(canary),
				"cfg", config{Host: "h", Token: canary},
				slog.Group("inner", "s", canary, "n", 3),
				"api_key", "plain-looking",
				"n", 42)
			out := buf.String()
			if strings.Contains(out, canary) {
				t.Fatalf("canary in log output:\n%s", out)
			}
			if strings.Contains(out, "plain-looking") {
				t.Errorf("a value under a credential's key was logged:\n%s", out)
			}
			for _, want := range []string{"42", "REDACTED", "calling"} {
				if !strings.Contains(out, want) {
					t.Errorf("log output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

func TestHandlerKeepsHarmlessValues(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(redact.New("canary-9876").Handler(slog.NewJSONHandler(&buf, nil)))
	log.Info("ok", "cfg", struct{ Host, Port string }{"h", "80"}, "err", errors.New("plain"))
	want := `"cfg":{"Host":"h","Port":"80"},"err":"plain"`
	if !strings.Contains(buf.String(), want) {
		t.Errorf("got %s, want it to contain %s", buf.String(), want)
	}
}

func TestConcurrentUse(t *testing.T) {
	r := redact.New("canary-9876")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if strings.Contains(r.String("x canary-9876 y"), "canary") {
					t.Error("leaked")
				}
			}
		})
	}
	wg.Wait()
}

func FuzzString(f *testing.F) {
	f.Add("s3cr3t-value", "hunter2!", "GET /?appid=", "&q=1")
	f.Add("abcREDA", "SECRETZ", "abc", "")
	f.Add("aaaa", "aaaaa", "aaaaaaaa", "aaa")
	f.Add("TEDR", "zzzz", "zzzzR", "zzzz")
	f.Add("x y+z", "a/b?c", "Authorization: Bearer ", " ")
	f.Add("abcdefgh", "EDACTED...", "abcd", "...")
	f.Fuzz(func(t *testing.T, s1, s2, a, b string) {
		r := redact.New(s1, s2)
		text := a + s1 + b + s2 + a
		outs := map[string]string{
			"String": r.String(text),
			"URL":    r.URL(text),
		}
		for i, arg := range r.Args([]string{a, s1, b, s2, text}) {
			outs[fmt.Sprint("Args ", i)] = arg
		}
		for _, s := range []string{s1, s2} {
			if len(s) < redact.MinSecretLen || strings.Contains(redact.Marker, s) {
				continue
			}
			for fn, out := range outs {
				if strings.Contains(out, s) {
					t.Fatalf("%s left secret %q in %q (input %q)", fn, s, out, text)
				}
			}
		}
	})
}

func TestSecretCutShortIsHidden(t *testing.T) {
	r := redact.New("s3cr3t-0123456789")
	for _, tt := range []struct{ in, want string }{
		{`got: string ("s3cr3t-01234 ...")`, `got: string ("REDACTED ...")`},
		{`quoting s3cr3t-0123…`, `quoting REDACTED…`},
		{`two: s3cr3t-01... and s3cr3t-0123456789`, `two: REDACTED... and REDACTED`},
		{`too short to tell: s3c...`, `too short to tell: s3c...`},
		{`not a prefix: 3cr3t-0123...`, `not a prefix: 3cr3t-0123...`},
		{`no ellipsis: s3cr3t-0123`, `no ellipsis: s3cr3t-0123`},
	} {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// WithLater's secrets are found once, at the first text redacted, and hidden
// from then on, with the earlier ones; nothing is looked for while nothing
// is redacted.
func TestWithLater(t *testing.T) {
	var calls atomic.Int32
	r := redact.New("early-secret").WithLater(func() []string {
		calls.Add(1)
		return []string{"later-secret"}
	})
	if calls.Load() != 0 {
		t.Fatal("the later secrets were looked for before any text was redacted")
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if got := r.String("a early-secret and a later-secret"); got != "a REDACTED and a REDACTED" {
				t.Errorf("String = %q", got)
			}
		})
	}
	wg.Wait()
	if got := r.Args([]string{"x", "later-secret"}); got[1] != "REDACTED" {
		t.Errorf("Args = %q", got)
	}
	if got := r.With("third-secret").String("later-secret third-secret early-secret"); got != "REDACTED REDACTED REDACTED" {
		t.Errorf("With over WithLater: %q", got)
	}
	twice := r.WithLater(func() []string { return []string{"fourth-secret"} })
	if got := twice.String("later-secret fourth-secret"); got != "REDACTED REDACTED" {
		t.Errorf("WithLater over WithLater: %q", got)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the later secrets were looked for %d times, want once", n)
	}
	if got := (*redact.Redactor)(nil).WithLater(func() []string { return []string{"nil-based"} }).String("nil-based"); got != "REDACTED" {
		t.Errorf("WithLater on nil: %q", got)
	}
}
