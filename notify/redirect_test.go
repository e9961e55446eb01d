package notify_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/notify"
	"github.com/fusebox-hq/fusebox/redirect"
)

const hookKey = "h00k-CANARY-key"

// redirector answers every request with a redirect to where(r), and keeps
// what it was sent.
func redirector(t *testing.T, where func(r *http.Request) string) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.reqs = append(r.reqs, received{req.Method, req.URL.Path, req.URL.RawQuery, req.Header, ""})
		r.mu.Unlock()
		if req.URL.Path == "/next" {
			return // the hop within the host: answered
		}
		http.Redirect(w, req, where(req), http.StatusFound)
	}))
	t.Cleanup(r.Close)
	return r
}

// A webhook on one loopback server redirects to a second one (another
// port: another origin). Its configured header and the token in its URL
// must never reach the second server, and no hop carries a Referer.
func TestWebhookRedirectsFollowTheEndpointsPolicy(t *testing.T) {
	tests := []struct {
		name        string
		redirects   redirect.Policy
		offOrigin   bool // the redirect points at the other server
		wantOther   int  // requests the other server must get
		wantFirst   int  // requests the first must get
		wantFailure string
	}{
		{"default: a hop to another server is not followed", "", true, 0, 1, "redirect to http://127.0.0.1:"},
		{"none: not even a hop within the host", redirect.None, false, 0, 1, "(redirects: none)"},
		{"default: a hop within the host is followed, headers kept", "", false, 0, 2, ""},
		{"any: followed to the other server, without the configured header", redirect.Any, true, 1, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			other := newReceiver(t, 200)
			first := redirector(t, func(r *http.Request) string {
				if tt.offOrigin {
					return other.URL + "/steal"
				}
				return "/next"
			})
			var logs strings.Builder
			hook := notify.Webhook{URL: first.URL + "/message?token=" + hookKey, Format: notify.Gotify,
				Headers: map[string]string{"X-Hook-Key": hookKey}, Redirects: tt.redirects}
			sender(notify.Rules{Webhooks: []notify.Webhook{hook}}, notify.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))).Listen(outage()[3])

			tries := 1
			if tt.wantFailure != "" {
				tries = 2 // a failed delivery is retried once
			}
			if got := len(first.got()); got != tt.wantFirst*tries {
				t.Errorf("the webhook's server got %d requests, want %d", got, tt.wantFirst*tries)
			}
			if got := len(other.got()); got != tt.wantOther {
				t.Errorf("the other server got %d requests, want %d", got, tt.wantOther)
			}
			for _, r := range append(first.got(), other.got()...) {
				if ref := r.header.Get("Referer"); ref != "" {
					t.Errorf("%s carried a Referer: %s", r.path, ref)
				}
			}
			for _, r := range other.got() {
				if r.header.Get("X-Hook-Key") != "" || strings.Contains(r.query, hookKey) {
					t.Errorf("the other server was sent the webhook's secret: %v ?%s", r.header, r.query)
				}
			}
			if !tt.offOrigin && tt.wantFirst == 2 {
				if k := first.got()[1].header.Get("X-Hook-Key"); k != hookKey {
					t.Errorf("a hop within the host lost the configured header: %q", k)
				}
			}
			if tt.wantFailure == "" {
				if strings.Contains(logs.String(), "notify failed") {
					t.Errorf("the delivery failed:\n%s", logs.String())
				}
				return
			}
			if !strings.Contains(logs.String(), tt.wantFailure) || strings.Contains(logs.String(), hookKey) {
				t.Errorf("log does not say why, or shows the key:\n%s", logs.String())
			}
		})
	}
}

// A heartbeat's URL is its secret: a hop within its host carries no Referer
// with it, and a hop elsewhere is not followed.
func TestHeartbeatRedirectsCarryNoReferer(t *testing.T) {
	other := newReceiver(t, 200)
	within := redirector(t, func(*http.Request) string { return "/next" })
	away := redirector(t, func(*http.Request) string { return other.URL + "/steal" })
	ctx := context.Background()
	if err := notify.Ping(ctx, http.DefaultClient, notify.Heartbeat{URL: within.URL + "/ping/" + hookKey}, true, ""); err != nil {
		t.Fatalf("a hop within the host: %v", err)
	}
	err := notify.Ping(ctx, http.DefaultClient, notify.Heartbeat{URL: away.URL + "/ping/" + hookKey, Kind: notify.UptimeKuma}, true, "")
	if err == nil || !strings.Contains(err.Error(), "not followed") || strings.Contains(err.Error(), hookKey) {
		t.Errorf("a hop to another server: err = %v, want not followed, without the URL's path", err)
	}
	reqs := within.got()
	if len(reqs) != 2 || reqs[1].path != "/next" || reqs[1].header.Get("Referer") != "" {
		t.Errorf("requests within the host = %+v, want the ping and the hop, no Referer", reqs)
	}
	if n := len(other.got()); n != 0 {
		t.Errorf("the other server got %d requests", n)
	}
}
