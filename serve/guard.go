package serve

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/fusebox-hq/fusebox/httpcall"
)

// guard wraps next with the checks every request passes before any route
// sees it (see the package doc). It answers refusals itself, as JSON.
type guard struct {
	hosts map[string]bool // accepted Host header values, lower case
	token string          // "" when none is required
	next  http.Handler
	cop   *http.CrossOriginProtection
	// slots hold the connections: a request with the token proves its
	// own, and one in the handler keeps its slot.
	slots *slots
}

func newGuard(listen string, names []string, token string, next http.Handler, slots *slots) (*guard, error) {
	hosts, err := allowedHosts(listen, names)
	if err != nil {
		return nil, err
	}
	g := &guard{hosts: hosts, token: token, next: next, cop: http.NewCrossOriginProtection(), slots: slots}
	return g, nil
}

// allowedHosts returns the Host values a request may carry: the listen
// address, its loopback spellings when it is on loopback, and each of names
// with and without the port.
func allowedHosts(listen string, names []string) (map[string]bool, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", listen, err)
	}
	hosts := map[string]bool{}
	add := func(h string) {
		h = strings.ToLower(h)
		hosts[h] = true
		hosts[strings.ToLower(net.JoinHostPort(h, port))] = true
	}
	add(host)
	if isLoopback(host) {
		add("localhost")
		add("127.0.0.1")
		add("::1")
	}
	for _, n := range names {
		if n == "" || strings.ContainsAny(n, "/ @") {
			return nil, fmt.Errorf("host name %q: want a bare name or address", n)
		}
		if h, p, err := net.SplitHostPort(n); err == nil {
			hosts[strings.ToLower(net.JoinHostPort(h, p))] = true
			continue
		}
		add(n)
	}
	// "[::1]:8417" is how a client writes it; JoinHostPort does the same.
	for h := range hosts {
		if strings.Contains(h, ":") && !strings.HasPrefix(h, "[") && net.ParseIP(h) != nil {
			hosts["["+h+"]"] = true
		}
	}
	return hosts, nil
}

// isLoopback reports whether host, from a listen address, accepts only
// connections from this machine.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ServeHTTP runs the checks on what the request line and header say, so a
// refused request's body is never read: its answer closes the connection
// (net/http then drops the connection instead of draining the body).
func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.slots.serve(r.Context(), func() { g.serveHTTP(w, r) })
}

func (g *guard) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if reason := notAPath(r); reason != "" {
		refuseAndClose(w, http.StatusBadRequest, reason)
		return
	}
	if reason := notAQuery(r); reason != "" {
		refuseAndClose(w, http.StatusBadRequest, reason)
		return
	}
	if !g.hosts[strings.ToLower(r.Host)] {
		refuseAndClose(w, http.StatusMisdirectedRequest, fmt.Sprintf("host %q is not this daemon's (see serve --host)", r.Host))
		return
	}
	if g.token != "" {
		if g.hasToken(r) {
			g.slots.prove(r.Context())
		} else if !isPage(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="fusebox"`)
			refuseAndClose(w, http.StatusUnauthorized, "missing or wrong token")
			return
		}
	}
	if err := g.cop.Check(r); err != nil {
		refuseAndClose(w, http.StatusForbidden, "cross-origin request refused")
		return
	}
	g.next.ServeHTTP(w, r)
}

// isSafe reports whether method is one that http.CrossOriginProtection
// lets through from any site.
func isSafe(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

func (g *guard) hasToken(r *http.Request) bool {
	got := r.Header.Get("X-Fusebox-Token")
	if auth := r.Header.Get("Authorization"); got == "" && len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
		got = auth[7:]
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(g.token)) == 1
}

// notAPath returns why r's target is refused, or "" when it is a plain
// origin-form path: the daemon fetches no URL a request names, and a path
// that a cleaner would rewrite is never served.
func notAPath(r *http.Request) string {
	if r.Method == http.MethodConnect {
		return "CONNECT refused: this is not a proxy"
	}
	raw := r.RequestURI
	if !strings.HasPrefix(raw, "/") || r.URL.Host != "" || r.URL.Scheme != "" {
		return "absolute-form request target refused: this is not a proxy"
	}
	path, _, _ := strings.Cut(raw, "?")
	// Each of the refused sequences holds a "%" or a backslash, or is "//":
	// a path with neither, as most are, is spared the lowering and the
	// six searches.
	if strings.ContainsAny(path, "%\\") || strings.Contains(path, "//") {
		lower := strings.ToLower(path)
		for _, bad := range []string{"%2e", "%2f", "%5c", "\\", "//", "%00"} {
			if strings.Contains(lower, bad) {
				return fmt.Sprintf("path with %q refused", bad)
			}
		}
	}
	for seg := range strings.SplitSeq(path, "/") {
		if seg == "." || seg == ".." {
			return "path with a dot segment refused"
		}
	}
	return ""
}

// notAQuery returns why r's query is refused, or "": a parameter name that
// holds a control character (a NUL, a tab, a line end; escaped, as %00) is
// one the servers behind the daemon read in different ways (PHP cuts a name
// at a NUL), so none is passed on. Values may hold anything, within the
// bounds of a caller's query (httpcall.CheckQuery): more parameters would
// crowd out the config's at a server that reads only so many.
func notAQuery(r *http.Request) string {
	raw := r.URL.RawQuery
	// Encoding grows a query at most threefold: one shorter than a third
	// of the bound, with fewer separators than parameters allowed, is
	// within it unparsed.
	if 3*len(raw) > httpcall.MaxQueryBytes || strings.Count(raw, "&") >= httpcall.MaxQueryParams {
		if _, err := httpcall.CheckQuery(r.URL.Query()); err != nil {
			return err.Error()
		}
	}
	if !strings.ContainsFunc(raw, func(c rune) bool { return c == '%' || c < 0x20 || c == 0x7f }) {
		return "" // nothing that decodes to a control character
	}
	for k := range r.URL.Query() {
		if strings.ContainsFunc(k, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
			return fmt.Sprintf("query parameter name %q holds a control character", k)
		}
	}
	return ""
}

// isPage reports whether r asks for the status page's own files, which hold
// no data: the page sends the token (from its #token=) with its API calls.
func isPage(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	switch r.URL.Path {
	case "/", "/index.html", "/app.js", "/style.css":
		return true
	}
	return false
}
