// Package redirect is the redirect policy of every HTTP request fusebox
// makes: an endpoint's calls (httpcall) and its notifications (notify). A
// Referer is never sent, a hop leaves the first URL's scheme, host and port
// only under Any, and such a hop carries none of the configured headers.
package redirect

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Policy says which redirects a request follows; "" is SameHost.
type Policy string

const (
	// SameHost follows a redirect only to the first URL's scheme, host and
	// port: a secret in the URL or a header cannot leave.
	SameHost Policy = "same-host"
	// None follows no redirect.
	None Policy = "none"
	// Any follows a redirect anywhere, dropping the configured headers once
	// the hop leaves the first URL's scheme, host and port.
	Any Policy = "any"
)

// Policies are the values of Policy, for messages.
var Policies = []Policy{SameHost, None, Any}

// MaxHops is how many hops a request follows, as net/http's default.
const MaxHops = 10

// Check returns the http.Client CheckRedirect of a request sent with the
// configured headers under p. net/http copies the first request's headers
// to every hop and adds a Referer holding the previous URL (with any key in
// its query) before calling it: Check takes the Referer away, and on a hop
// to another origin the configured headers.
func Check(p Policy, headers map[string]string) func(req *http.Request, via []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= MaxHops {
			return fmt.Errorf("stopped after %d redirects", MaxHops)
		}
		req.Header.Del("Referer")
		if SameOrigin(req.URL, via[0].URL) {
			if p == None {
				return http.ErrUseLastResponse
			}
			if v, ok := header(headers, "Referer"); ok {
				req.Header.Set("Referer", v) // the configured one, to its own host
			}
			return nil
		}
		if p != Any {
			return http.ErrUseLastResponse
		}
		for k := range headers {
			req.Header.Del(k)
		}
		if _, ok := header(headers, "Host"); ok {
			req.Host = "" // the configured Host named the first server, not this one
		}
		return nil
	}
}

func header(h map[string]string, name string) (string, bool) {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// SameOrigin reports whether a and b have the same scheme, host and port,
// a missing port being the scheme's default.
func SameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) &&
		portOf(a) == portOf(b)
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// Refused returns the reason resp, the answer of a request sent under p,
// is a redirect that was not followed, or "" when it is none. redact hides
// what the Location's URL may hold.
func Refused(p Policy, resp *http.Response, redact func(string) string) string {
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
	default:
		return ""
	}
	loc, err := resp.Location()
	if err != nil {
		if errors.Is(err, http.ErrNoLocation) {
			return ""
		}
		return fmt.Sprintf("status %d with an unreadable Location", resp.StatusCode)
	}
	if p == "" {
		p = SameHost
	}
	return fmt.Sprintf("status %d: redirect to %s not followed (redirects: %s)", resp.StatusCode, redact(loc.String()), p)
}
