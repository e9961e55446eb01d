package httpcall_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/mem"
	"github.com/fusebox-hq/fusebox/redirect"
)

// seen is what a server was sent.
type seen struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (s *seen) record(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r)
}

func (s *seen) all() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.reqs...)
}

// namedHosts is a transport that dials api.test and evil.test (port 80) to
// two real servers on 127.0.0.1, so a redirect between them changes the
// host name as it would between machines.
func namedHosts(hosts map[string]string) http.RoundTripper {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if to, ok := hosts[addr]; ok {
			addr = to
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	return tr
}

const secretKey = "k3y-CANARY-0123"

// TestRedirectsNeverCarrySecretsToAnotherHost: api.test redirects to
// evil.test, or to itself. A secret in the URL (appid=...) or in a header
// must never reach evil.test, and no hop carries a Referer.
func TestRedirectsNeverCarrySecretsToAnotherHost(t *testing.T) {
	tests := []struct {
		name      string
		redirects redirect.Policy
		to        string // where api.test/start redirects
		wantBody  string // "" when the call must fail
		wantEvil  int    // requests evil.test must get
		wantAPI   int    // requests api.test must get
		reason    string
	}{
		{"default: a hop to another host is not followed", "", "http://evil.test/steal", "", 0, 1,
			"status 302: redirect to http://evil.test/steal not followed (redirects: same-host)"},
		{"same-host: a hop to another port of the same host is not followed", redirect.SameHost, "http://api.test:81/steal", "", 0, 1,
			"redirect to http://api.test:81/steal not followed"},
		{"same-host: a hop to https on the same host is not followed", redirect.SameHost, "https://api.test/steal", "", 0, 1,
			"redirect to https://api.test/steal not followed"},
		{"default: a hop within the host is followed, headers kept", "", "/next", "api next", 0, 2, ""},
		{"none: not even a hop within the host", redirect.None, "/next", "", 0, 1,
			"redirect to http://api.test/next not followed (redirects: none)"},
		{"any: followed to another host, without the configured headers", redirect.Any, "http://evil.test/steal", "evil", 1, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var api, evil seen
			apiSrv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				api.record(r)
				if r.URL.Path == "/start" {
					http.Redirect(w, r, tt.to, http.StatusFound)
					return
				}
				_, _ = w.Write([]byte("api next"))
			})
			evilSrv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				evil.record(r)
				_, _ = w.Write([]byte("evil"))
			})
			apiAddr := strings.TrimPrefix(apiSrv.URL, "http://")
			rt := namedHosts(map[string]string{
				"api.test:80": apiAddr, "evil.test:80": strings.TrimPrefix(evilSrv.URL, "http://"),
				"api.test:81": strings.TrimPrefix(evilSrv.URL, "http://"), "api.test:443": strings.TrimPrefix(evilSrv.URL, "http://"),
			})
			ep := endpoint("weather", "http://api.test/start?appid="+secretKey, func(e *httpcall.Endpoint) {
				e.Headers = map[string]string{"X-Api-Key": secretKey, "Authorization": "Bearer " + secretKey, "Cookie": "s=" + secretKey}
				e.Redirects = tt.redirects
				e.Secrets = []string{secretKey}
			})
			h := newHarness(t, []*httpcall.Endpoint{ep}, nil, httpcall.WithTransport(rt))

			res, err := h.call("weather")
			if tt.wantBody != "" {
				if err != nil || string(res.Body) != tt.wantBody {
					t.Fatalf("Call = %+v, %v; want body %q", res, err, tt.wantBody)
				}
			} else {
				if err == nil {
					t.Fatalf("Call answered %q; want the redirect refused", res.Body)
				}
				wantContains(t, "errors", reasons(res.Errors), tt.reason)
				if strings.Contains(reasons(res.Errors), secretKey) {
					t.Errorf("the reason carries the secret: %s", reasons(res.Errors))
				}
			}
			if got := len(api.all()); got != tt.wantAPI {
				t.Errorf("api.test got %d requests, want %d (a refused redirect is not retried)", got, tt.wantAPI)
			}
			if got := len(evil.all()); got != tt.wantEvil {
				t.Fatalf("evil.test got %d requests, want %d", got, tt.wantEvil)
			}
			for _, r := range evil.all() {
				dump := r.URL.String() + "\n"
				for k, v := range r.Header {
					dump += k + ": " + strings.Join(v, ",") + "\n"
				}
				if strings.Contains(dump, secretKey) {
					t.Errorf("evil.test was sent the secret:\n%s", dump)
				}
			}
			for k, r := range append(api.all(), evil.all()...) {
				if ref := r.Header.Get("Referer"); ref != "" {
					t.Errorf("request %d to %s carried Referer %q", k, r.Host, ref)
				}
			}
			if reqs := api.all(); len(reqs) == 2 && reqs[1].Header.Get("X-Api-Key") != secretKey {
				t.Errorf("a hop within the host lost the configured header X-Api-Key")
			}
		})
	}
}

func TestUnknownRedirectPolicyIsRefused(t *testing.T) {
	ep := endpoint("weather", "http://api.test/", func(e *httpcall.Endpoint) { e.Redirects = "same-origin" })
	_, err := httpcall.New(mem.New(), []*httpcall.Endpoint{ep}, nil)
	if err == nil || !strings.Contains(err.Error(), `redirects "same-origin": want one of same-host, none, any`) {
		t.Fatalf("New = %v", err)
	}
}
