package httpcall_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/mem"
	"github.com/fusebox-hq/fusebox/redact"
)

// Canaries planted where secrets live: one declared in Secrets (and used in
// the URL path, as a Telegram bot token is), one in an Authorization header,
// one in a query string, one known only to the Redactor given to New.
const (
	secretCanary   = "CANARY-secret-7f3a9"
	headerCanary   = "CANARY-header-91c2"
	queryCanary    = "CANARY-query-44d1"
	redactorCanary = "CANARY-redactor-0b7e"
)

var canaries = []string{secretCanary, headerCanary, queryCanary, redactorCanary}

func TestSecretsAppearNowhere(t *testing.T) {
	var mu sync.Mutex
	var seen []string // what the servers received, to prove the secrets were sent
	mode := map[string]int{}
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.URL.String()+" "+r.Header.Get("Authorization")+" "+r.Header.Get("X-Extra"))
		code := mode[r.URL.Path]
		if code == 0 {
			code = 200
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	closed := fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t))
	secretEndpoint := func(name, base, path string, mods ...func(*httpcall.Endpoint)) *httpcall.Endpoint {
		e := endpoint(name, base+"/bot"+secretCanary+path+"?q=1&appid="+queryCanary, mods...)
		e.Headers = map[string]string{"Authorization": "Bearer " + headerCanary, "X-Extra": redactorCanary}
		e.Secrets = []string{secretCanary}
		e.Policy.Breaker.TripAfter = 2
		return e
	}
	mode["/bot"+secretCanary+"/fails"] = 500
	mode["/bot"+secretCanary+"/denied"] = 401
	mode["/bot"+secretCanary+"/nojson"] = 200
	endpoints := []*httpcall.Endpoint{
		secretEndpoint("fails", s.URL, "/fails"),
		secretEndpoint("denied", s.URL, "/denied"),
		secretEndpoint("refused", closed, "/refused"),
		secretEndpoint("expects", s.URL, "/nojson", func(e *httpcall.Endpoint) { e.Expect.JQ = httpcall.JQSource(".ok == false") }),
		secretEndpoint("good", s.URL, "/good", func(e *httpcall.Endpoint) { e.Fresh = time.Hour; e.Stale = time.Hour }),
	}
	chains := []*httpcall.Chain{{Name: "chain", Endpoints: []string{"fails", "denied", "refused", "expects", "good"}, Stale: time.Hour}}

	var logs testenv.Buffer
	text := slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})
	jsonLogs := slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})
	store := mem.New()
	for i, handler := range []slog.Handler{text, jsonLogs} {
		c, err := httpcall.New(store, endpoints, chains,
			httpcall.WithLogger(slog.New(handler)), httpcall.WithRedactor(redact.New(redactorCanary)))
		if err != nil {
			t.Fatal(err)
		}
		var outputs []string
		record := func(res *httpcall.Result, err error) {
			if err != nil {
				outputs = append(outputs, err.Error())
			}
			if res != nil {
				env, err := res.Envelope()
				if err != nil {
					t.Fatal(err)
				}
				outputs = append(outputs, string(env))
			}
		}
		for _, name := range []string{"fails", "fails", "fails", "denied", "refused", "expects", "chain", "good", "good"} {
			record(c.Call(context.Background(), name, httpcall.CallOptions{}))
		}
		mu.Lock()
		mode["/bot"+secretCanary+"/good"] = 503
		mu.Unlock()
		record(c.Call(context.Background(), "chain", httpcall.CallOptions{})) // stale
		record(c.Call(context.Background(), "chain", httpcall.CallOptions{NoStale: true}))
		c.CloseIdleConnections()
		mu.Lock()
		mode["/bot"+secretCanary+"/good"] = 200
		mu.Unlock()

		for _, out := range outputs {
			noCanary(t, "call output", out)
		}
		if i == 0 {
			wantContains(t, "outputs", strings.Join(outputs, "\n"), "circuit open", "status 500", "connection refused", "was false", "stale")
		}
	}
	noCanary(t, "log", logs.String())
	wantContains(t, "log", logs.String(), "botREDACTED", "appid=REDACTED", "401 Unauthorized")
	noCanary(t, "store", dumpStore(t, store, "fails", "denied", "refused", "expects", "good", "chain"))

	mu.Lock()
	defer mu.Unlock()
	got := strings.Join(seen, "\n")
	for _, c := range canaries {
		if !strings.Contains(got, c) {
			t.Errorf("the servers never received %s: the test proves nothing", c)
		}
	}
}

func noCanary(t *testing.T, what, s string) {
	t.Helper()
	for _, c := range canaries {
		if strings.Contains(s, c) {
			t.Errorf("%s holds the secret %s:\n%s", what, c, s)
		}
	}
}

// dumpStore returns everything the store holds for the keys, as JSON.
func dumpStore(t *testing.T, s fusebox.Admin, keys ...string) string {
	t.Helper()
	ctx := context.Background()
	names, err := s.Names(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dump := map[string]any{"names": names}
	for _, k := range append(names, keys...) {
		st, _ := s.Load(ctx, k)
		events, _ := s.Events(ctx, k, time.Time{})
		a, ok, _ := s.(answers.Store).LoadAnswer(ctx, k)
		dump[k] = map[string]any{"state": st, "events": events, "answer": a, "has_answer": ok}
	}
	b, err := json.Marshal(dump)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "status 500") {
		t.Fatalf("store dump lacks the recorded failures:\n%s", b)
	}
	return string(b)
}
