package reliability

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// Canaries: one secret per way a secret reaches fusebox. Letters, digits and
// dashes only, so that they read the same escaped into a URL or JSON.
const (
	canaryEnv    = "cnry-env-4e1f9b7d2a" // ${FUSEBOX_TEST_TOKEN}
	canarySecret = "cnry-sec-8c3d0a6e5f" // !secret api_secret
	canaryFile   = "cnry-file-1b9e7c4d3" // ${file:token}
	canaryHeader = "cnry-hdr-6f2a8d1c0e" // Authorization: Bearer ... written in the config
	canaryQuery  = "cnry-qry-3d7b5e9f1a" // ?appid=... written in the config
)

var canaries = []string{canaryEnv, canarySecret, canaryFile, canaryHeader, canaryQuery}

// upstreamForSecrets answers /ok only when every secret arrived, so the test
// knows they were really used; /fail is a 500, /unauth a 401, /redirect sends
// the client to a closed port with a secret in the query.
func upstreamForSecrets(t *testing.T, closed string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			h := r.Header
			if h.Get("Authorization") != "Bearer "+canaryHeader || h.Get("X-Env-Key") != canaryEnv ||
				h.Get("X-Secret") != canarySecret || h.Get("X-File") != canaryFile || r.URL.Query().Get("appid") != canaryQuery {
				http.Error(w, "missing credentials", http.StatusForbidden)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"main": {"temp": 21.5}}`)
		case "/fail":
			http.Error(w, "upstream broke", http.StatusInternalServerError)
		case "/unauth":
			http.Error(w, "bad token", http.StatusUnauthorized)
		case "/redirect":
			http.Redirect(w, r, "http://"+closed+"/?appid="+canaryQuery+"&token="+canaryEnv, http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestSecretsNeverLeak plants a canary secret in an environment variable, a
// !secret, a ${file:...}, an Authorization header and a query string, runs
// every command on its success and failure paths, verbose, in both log
// formats, and looks for the canaries in every byte fusebox printed or
// wrote under the state dir.
func TestSecretsNeverLeak(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	closed := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	srv := upstreamForSecrets(t, closed)
	writeFile := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	writeFile("token", canaryFile+"\n")
	writeFile("secrets.yaml", "api_secret: "+canarySecret+"\n")
	endpoint := func(name, url string) string {
		return fmt.Sprintf(`  %s:
    attempts: 2
    backoff: 1ms
    max_delay: 2ms
    trip_after: 100
    http:
      url: "%s?appid=%s&city=Berlin"
      headers:
        Authorization: "Bearer %s"
        X-Env-Key: "${FUSEBOX_TEST_TOKEN}"
        X-Secret: !secret api_secret
        X-File: "${file:token}"
`, name, url, canaryQuery, canaryHeader)
	}
	config := writeFile("config.yaml", "circuits:\n"+
		endpoint("api", srv.URL+"/ok")+
		endpoint("broken", srv.URL+"/fail")+
		endpoint("refused", "http://"+closed+"/")+
		endpoint("unauth", srv.URL+"/unauth")+
		endpoint("redirect", srv.URL+"/redirect")+
		"  job: {attempts: 2, backoff: 1ms}\n"+
		"chains:\n  weather: {endpoints: [broken, api], stale: 1h}\n  dead: {endpoints: [refused, broken], stale: 1h}\n")
	// A config whose error messages are built from expanded values.
	badConfig := writeFile("bad.yaml", fmt.Sprintf("circuits:\n  a:\n    http:\n      url: \"%s/%%zz?appid=${FUSEBOX_TEST_TOKEN}\"\n"+
		"  b:\n    http:\n      url: \"ftp://h/?appid=${FUSEBOX_TEST_TOKEN}&key=%s\"\n", srv.URL, canaryQuery))
	env := []string{"FUSEBOX_TEST_TOKEN=" + canaryEnv, "FUSEBOX_CONFIG=" + config}
	adhoc := srv.URL + "/fail?appid=" + canaryQuery + "&token=" + canaryEnv

	var out bytes.Buffer // everything fusebox printed
	redacted, commands := 0, 0
	for i, c := range []struct {
		args []string
		code int
	}{
		{[]string{"validate"}, 0},
		{[]string{"call", "-v", "api"}, 0},
		{[]string{"call", "-v", "--json", "api"}, 0},
		{[]string{"call", "-v", "weather"}, 0},
		{[]string{"call", "-v", "--json", "--no-fresh", "weather"}, 0},
		{[]string{"call", "-v", "broken"}, 69},
		{[]string{"call", "-v", "--json", "broken"}, 69},
		{[]string{"call", "-v", "--log-format", "json", "refused"}, 69},
		{[]string{"call", "-v", "unauth"}, 69},
		{[]string{"call", "-v", "--json", "redirect"}, 69},
		{[]string{"call", "-v", "--json", "dead"}, 69},
		{[]string{"call", "-v", "--attempts", "2", "--backoff", "1ms", "--trip-after", "100", "--url", adhoc, "adhoc"}, 69},
		{[]string{"call", "-v", "--attempts", "2", "--backoff", "1ms", "--trip-after", "100", "--log-format", "json", "--json", "--url", adhoc, "adhoc"}, 69},
		{testenv.RunArgs("job", []string{"-v"}, "sh", "-c", "exit 3", "sh", "Authorization: Bearer "+canaryHeader, "https://h/?appid="+canaryQuery, canaryEnv, canarySecret, canaryFile), 3},
		{testenv.RunArgs("job", []string{"-v", "--log-format", "json"}, "sh", "-c", "exit 0", "sh", "--token="+canaryQuery, canaryEnv), 0},
		{[]string{"status"}, 0},
		{[]string{"status", "--json"}, 0},
		{[]string{"status", "--json", "api", "broken", "weather"}, 0},
		{[]string{"trip", "api", "--for", "1m"}, 0},
		{[]string{"call", "-v", "--json", "api"}, 75},
		{[]string{"call", "-v", "--json", "weather"}, 0}, // stale: api is tripped, broken fails
		{[]string{"reset", "api"}, 0},
		{[]string{"gc"}, 0},
		{[]string{"validate", "--config", badConfig}, 78},
		{[]string{"run", "--config", badConfig, "x", "--", "true"}, 0}, // runs under the defaults
		{[]string{"call", "--config", badConfig, "a"}, 78},
	} {
		p := fbEnv(t, state, env, c.args...)
		commands++
		if p.Code != c.code {
			t.Errorf("command %d (fusebox %s): exit %d, want %d\n%s%s", i, c.args[0], p.Code, c.code, p.Stdout, p.Stderr)
		}
		// The commands' arguments hold canaries: the transcript numbers them.
		fmt.Fprintf(&out, "$ command %d (fusebox %s)\n%s%s", i, c.args[0], p.Stdout, p.Stderr)
		redacted += strings.Count(p.Stdout+p.Stderr, "REDACTED")
	}
	if redacted == 0 {
		t.Error("nothing was redacted: the secrets never reached a log line, so this test proves nothing")
	}
	for _, canary := range canaries {
		if i := strings.Index(out.String(), canary); i >= 0 {
			s := out.String()
			t.Errorf("canary %s printed: …%s…", canary, s[max(0, i-300):min(len(s), i+100)])
		}
	}
	files := 0
	for path, b := range readAll(t, state) {
		files++
		for _, canary := range canaries {
			if bytes.Contains(b, []byte(canary)) {
				t.Errorf("canary %s written to %s:\n%s", canary, path, b)
			}
		}
	}
	t.Logf("%d commands, %d REDACTED markers in their output, %d files under the state dir: no canary anywhere", commands, redacted, files)
}
