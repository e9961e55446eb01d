package notify_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/notify"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 3, 1, 6, 15, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// outage is the log of a bridge down from t0: three failures open it at
// 20s, probes fail at 50s, 110s, 230s and 470s, and one succeeds at 800s.
func outage() []breaker.Event {
	fail := func(s int, why string) breaker.Event {
		return breaker.Event{Time: at(s), Circuit: "bridge", Kind: breaker.EventFailure, Reason: why}
	}
	tr := func(s int, from, to breaker.Phase, why string) breaker.Event {
		return breaker.Event{Time: at(s), Circuit: "bridge", Kind: breaker.EventTransition, From: from, To: to, Reason: why, Since: t0}
	}
	return []breaker.Event{
		fail(0, "refused"), fail(10, "refused"), fail(20, "refused"),
		tr(20, breaker.Closed, breaker.Open, "3 consecutive failures"),
		fail(50, "status 502"), tr(50, breaker.HalfOpen, breaker.Open, "probe failed: status 502"),
		fail(110, "status 502"), tr(110, breaker.HalfOpen, breaker.Open, "probe failed: status 502"),
		fail(230, "status 502"), tr(230, breaker.HalfOpen, breaker.Open, "probe failed: status 502"),
		fail(470, "status 502"), tr(470, breaker.HalfOpen, breaker.Open, "probe failed: status 502"),
		tr(800, breaker.HalfOpen, breaker.Closed, "probe succeeded"),
	}
}

// decisions runs Decide on every transition of the log as the process that
// made each would, with the log as stored at that moment.
func decisions(r notify.Rules, log []breaker.Event) []string {
	var got []string
	for i, e := range log {
		if m, ok := notify.Decide(r, log[:i+1], e); ok {
			got = append(got, string(m.Kind)+"@"+m.Time.Sub(t0).String())
		}
	}
	return got
}

func TestDecideSendsOneMessagePerTransitionThatMatters(t *testing.T) {
	tests := []struct {
		name  string
		rules notify.Rules
		want  string
	}{
		{"at once: the opening and the closing", notify.Rules{}, "opened@20s closed@13m20s"},
		{"after 2m: the first failed probe past it, then the closing", notify.Rules{After: 2 * time.Minute}, "opened@3m50s closed@13m20s"},
		{"after an hour: a 13-minute outage is never announced", notify.Rules{After: time.Hour}, ""},
		{"the third failed probe", notify.Rules{ProbeFailed: 3}, "opened@20s probe_failed@3m50s closed@13m20s"},
		{"a probe count reached before after sends nothing more", notify.Rules{After: 5 * time.Minute, ProbeFailed: 2}, "opened@7m50s closed@13m20s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(decisions(tt.rules, outage()), " "); got != tt.want {
				t.Errorf("messages = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDecideIgnoresMaintenanceAndFailures(t *testing.T) {
	trip := breaker.Event{Time: t0, Circuit: "nas", Kind: breaker.EventTransition, From: breaker.Closed, To: breaker.ForcedOpen, Reason: "tripped by hand"}
	reset := breaker.Event{Time: at(60), Circuit: "nas", Kind: breaker.EventTransition, From: breaker.ForcedOpen, To: breaker.Closed, Reason: "reset by hand"}
	for _, e := range []breaker.Event{trip, reset, outage()[0]} {
		if m, ok := notify.Decide(notify.Rules{}, nil, e); ok {
			t.Errorf("%s %s sent %+v", e.Kind, e.To, m)
		}
	}
	m, ok := notify.Decide(notify.Rules{}, outage(), outage()[3])
	if !ok || m.LastFailure != "refused" || !strings.Contains(m.Text(), "bridge is down since") || m.Title() != "bridge is down" {
		t.Errorf("opening's message = %+v (%q)", m, m.Text())
	}
}

// receiver is a local HTTP server that keeps every request.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []received
}

type received struct {
	method, path, query string
	header              http.Header
	body                string
}

func newReceiver(t *testing.T, status int) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, received{req.Method, req.URL.Path, req.URL.RawQuery, req.Header, string(b)})
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) got() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.reqs...)
}

// sender sends with rules for every circuit, over the outage log.
func sender(r notify.Rules, opts ...notify.Option) *notify.Sender {
	return notify.NewSender(func(string) notify.Rules { return r },
		func(_ context.Context, _ string, since time.Time) ([]breaker.Event, error) { return outage(), nil }, opts...)
}

func TestWebhookFormats(t *testing.T) {
	opening := outage()[3]
	tests := []struct {
		format notify.Format
		check  func(t *testing.T, r received)
	}{
		{notify.JSON, func(t *testing.T, r received) {
			var b notify.WebhookBody
			if err := json.Unmarshal([]byte(r.body), &b); err != nil || r.header.Get("Content-Type") != "application/json" {
				t.Fatalf("body %q: %v", r.body, err)
			}
			if b.Circuit != "bridge" || b.Event != notify.Opened || b.DownSeconds != 20 || b.Since != "2026-03-01T06:15:00.000Z" || b.LastFailure != "refused" {
				t.Errorf("body = %+v", b)
			}
		}},
		{notify.Ntfy, func(t *testing.T, r received) {
			if r.header.Get("Title") != "bridge is down" || r.header.Get("Priority") != "high" || r.header.Get("Tags") != "warning" || !strings.HasPrefix(r.body, "bridge is down since") {
				t.Errorf("ntfy request: headers %v, body %q", r.header, r.body)
			}
		}},
		{notify.Gotify, func(t *testing.T, r received) {
			var b struct {
				Title, Message string
				Priority       int
			}
			if err := json.Unmarshal([]byte(r.body), &b); err != nil || b.Title != "bridge is down" || b.Priority != 8 || !strings.Contains(b.Message, "refused") {
				t.Errorf("gotify body %q: %v", r.body, err)
			}
			if r.header.Get("X-Gotify-Key") != "app-token" {
				t.Errorf("gotify key header = %q", r.header.Get("X-Gotify-Key"))
			}
		}},
		{notify.HomeAssistant, func(t *testing.T, r received) {
			var b map[string]any
			if err := json.Unmarshal([]byte(r.body), &b); err != nil || b["event"] != "opened" || b["circuit"] != "bridge" || r.path != "/api/webhook/fusebox-bridge" {
				t.Errorf("home assistant request %s: %q: %v", r.path, r.body, err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(string(tt.format), func(t *testing.T) {
			rcv := newReceiver(t, 200)
			hook := notify.Webhook{URL: rcv.URL + "/api/webhook/fusebox-bridge", Format: tt.format}
			if tt.format == notify.Gotify {
				hook.URL, hook.Headers = rcv.URL+"/message", map[string]string{"X-Gotify-Key": "app-token"}
			}
			sender(notify.Rules{Webhooks: []notify.Webhook{hook}}).Listen(opening)
			got := rcv.got()
			if len(got) != 1 || got[0].method != "POST" {
				t.Fatalf("requests = %+v, want one POST", got)
			}
			tt.check(t, got[0])
		})
	}
}

func TestFailedDeliveryIsRetriedOnce(t *testing.T) {
	rcv := newReceiver(t, 500)
	sender(notify.Rules{Webhooks: []notify.Webhook{{URL: rcv.URL}}}).Listen(outage()[3])
	if n := len(rcv.got()); n != 2 {
		t.Errorf("a failing webhook was tried %d times, want 2", n)
	}
	rcv = newReceiver(t, 200)
	sender(notify.Rules{Webhooks: []notify.Webhook{{URL: rcv.URL}}}).Listen(outage()[0]) // a failure, no transition
	sender(notify.Rules{Webhooks: []notify.Webhook{{URL: rcv.URL}}}).Listen(outage()[5]) // a failed probe: no message
	if n := len(rcv.got()); n != 0 {
		t.Errorf("%d requests for events that send nothing", n)
	}
}

func TestAHangingWebhookIsGivenUpWithinTheTimeout(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release)
	const timeout = 300 * time.Millisecond
	start := time.Now()
	sender(notify.Rules{Timeout: timeout, Webhooks: []notify.Webhook{{URL: hang.URL}}}).Listen(outage()[3])
	if took := time.Since(start); took < timeout/2 || took > timeout+2*time.Second {
		t.Errorf("Listen took %s with a hanging webhook, want about the %s timeout", took, timeout)
	}
}

func TestCommandGetsTheMessageInItsEnvironment(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "env")
	script := filepath.Join(dir, "on-open")
	os.WriteFile(script, []byte("#!/bin/sh\nenv | grep ^FUSEBOX_ | sort > \"$1\"\n"), 0o700)
	sender(notify.Rules{OnOpen: []string{script, out}}).Listen(outage()[3])
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"FUSEBOX_EVENT=opened", "FUSEBOX_CIRCUIT=bridge", "FUSEBOX_DOWN_SECONDS=20", "FUSEBOX_LAST_FAILURE=refused", "FUSEBOX_SINCE=2026-03-01T06:15:00.000Z", "FUSEBOX_FAILED_PROBES=0"} {
		if !strings.Contains(string(b), want+"\n") {
			t.Errorf("environment lacks %s:\n%s", want, b)
		}
	}
	os.Remove(out)
	sender(notify.Rules{OnOpen: []string{script, out}}).Listen(outage()[len(outage())-1]) // closed: no on_close
	if _, err := os.Stat(out); err == nil {
		t.Error("on_open ran on a closing")
	}
}

func TestHeartbeats(t *testing.T) {
	rcv := newReceiver(t, 200)
	r := notify.Rules{Heartbeats: []notify.Heartbeat{
		{URL: rcv.URL + "/hc/uuid-1"},
		{URL: rcv.URL + "/api/push/kuma1?extra=1", Kind: notify.UptimeKuma},
	}}
	s := sender(r)
	s.Heartbeat(context.Background(), "bridge", true, "")
	s.Heartbeat(context.Background(), "bridge", false, "attempts exhausted after 3 attempts: refused")
	var got []string
	for _, q := range rcv.got() {
		got = append(got, q.method+" "+q.path+"?"+q.query+" "+q.body)
	}
	want := map[string]bool{
		"GET /hc/uuid-1? ": true,
		"POST /hc/uuid-1/fail? attempts exhausted after 3 attempts: refused":                                true,
		"GET /api/push/kuma1?extra=1&msg=OK&ping=&status=up ":                                               true,
		"GET /api/push/kuma1?extra=1&msg=attempts+exhausted+after+3+attempts%3A+refused&ping=&status=down ": true,
	}
	if len(got) != 4 {
		t.Fatalf("pings = %q, want 4", got)
	}
	for _, g := range got {
		if !want[g] {
			t.Errorf("unexpected ping %q", g)
		}
	}
}

func TestAFailureToNotifyDoesNotLogTheURL(t *testing.T) {
	var logs strings.Builder
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	sender(notify.Rules{Webhooks: []notify.Webhook{{URL: "http://127.0.0.1:1/secret-topic?token=t0k"}}}, notify.WithLogger(logger)).Listen(outage()[3])
	if strings.Contains(logs.String(), "secret-topic") || strings.Contains(logs.String(), "t0k") || !strings.Contains(logs.String(), "notify failed") {
		t.Errorf("log:\n%s", logs.String())
	}
}

// The closing says how long the outage was as the range it is known to: the
// bridge was still down at its last failed probe (470s) and back by the
// probe that closed it (800s).
func TestAClosingTellsTheOutageAsARange(t *testing.T) {
	log := outage()
	m, ok := notify.Decide(notify.Rules{}, log, log[len(log)-1])
	if !ok || m.Kind != notify.Closed {
		t.Fatalf("no closing: %+v", m)
	}
	if !m.LastFailureAt.Equal(at(470)) || m.DownAtLeast != 470*time.Second || m.Down != 800*time.Second {
		t.Errorf("last failure %s, down at least %s, at most %s; want 470s, 7m50s, 13m20s", m.LastFailureAt, m.DownAtLeast, m.Down)
	}
	if got := m.Text(); !strings.Contains(got, "is back after 7m50s–13m20s down") {
		t.Errorf("text %q", got)
	}
	b := notify.Body(m)
	if b.DownAtLeastSeconds != 470 || b.DownSeconds != 800 || b.LastFailureAt == "" {
		t.Errorf("webhook body %+v", b)
	}
	// A start the clock cannot have meant tells nothing.
	e := log[len(log)-1]
	e.Since = time.Time{}.Add(time.Hour) // year 1
	if m, ok := notify.Decide(notify.Rules{}, log, e); ok {
		t.Errorf("a closing of an outage since year 1 was told: %s", m.Text())
	}
}
