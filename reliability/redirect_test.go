package reliability

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestRedirectCarriesNoSecretToAnotherHost: the configured host
// (127.0.0.1) redirects to another host name (localhost, another port).
// By default fusebox does not follow, exit 69 naming where it pointed; with
// `redirects: any` it follows, and the other host gets neither a Referer
// (which held the URL with appid=...) nor a configured header. Nothing it
// receives holds a canary.
func TestRedirectCarriesNoSecretToAnotherHost(t *testing.T) {
	var mu sync.Mutex
	var got []string // what the other host received
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s\n", r.Method, r.URL)
		for k, v := range r.Header {
			fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(v, ","))
		}
		mu.Lock()
		got = append(got, b.String())
		mu.Unlock()
		fmt.Fprint(w, "21.5")
	}))
	defer other.Close()
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1) + "/elsewhere"
	home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherURL, http.StatusFound)
	}))
	defer home.Close()

	for _, tt := range []struct {
		redirects string
		code      int
		hits      int
	}{{"", 69, 0}, {"same-host", 69, 0}, {"none", 69, 0}, {"any", 0, 1}} {
		t.Run("redirects "+tt.redirects, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			dir := t.TempDir()
			policy := ""
			if tt.redirects != "" {
				policy = "\n      redirects: " + tt.redirects
			}
			cfg := fmt.Sprintf(`circuits:
  weather:
    attempts: 1
    http:
      url: %s/data?appid=%s
      headers: {X-Api-Key: %s, Authorization: "Bearer %s"}%s
`, home.URL, canaryQuery, canaryHeader, canaryEnv, policy)
			write(t, filepath.Join(dir, "config.yaml"), []byte(cfg))
			p := fbEnv(t, filepath.Join(dir, "state"), []string{"FUSEBOX_CONFIG=" + filepath.Join(dir, "config.yaml")}, "call", "weather")
			if p.Code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", p.Code, tt.code, p.Stderr)
			}
			if tt.code != 0 && !strings.Contains(p.Stderr, "redirect to "+otherURL+" not followed") {
				t.Errorf("stderr does not say where the redirect pointed:\n%s", p.Stderr)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != tt.hits {
				t.Fatalf("the other host got %d requests, want %d", len(got), tt.hits)
			}
			for _, req := range got {
				for _, c := range canaries {
					if strings.Contains(req, c) {
						t.Errorf("the other host received canary %s:\n%s", c, req)
					}
				}
				if strings.Contains(req, "Referer") {
					t.Errorf("the other host received a Referer:\n%s", req)
				}
			}
			for _, c := range canaries {
				if strings.Contains(p.Stdout+p.Stderr, c) {
					t.Errorf("fusebox printed canary %s:\n%s%s", c, p.Stdout, p.Stderr)
				}
			}
		})
	}
}
