package httpcall

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// maxRedirects is how many hops a request follows, as net/http's default.
const maxRedirects = 10

// checkRedirect is ep's http.Client.CheckRedirect: it follows a hop only as
// ep.Redirects allows, and strips what must not travel with it. net/http
// copies the first request's headers to every hop and adds a Referer
// holding the previous URL (with any key in its query) before calling it.
func (ep *endpoint) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	req.Header.Del("Referer")
	if sameOrigin(req.URL, via[0].URL) {
		if ep.Redirects == RedirectsNone {
			return http.ErrUseLastResponse
		}
		if v, ok := configuredHeader(ep.Headers, "Referer"); ok {
			req.Header.Set("Referer", v) // the endpoint's own, to its own host
		}
		return nil
	}
	if ep.Redirects != RedirectsAny {
		return http.ErrUseLastResponse
	}
	for k := range ep.Headers {
		req.Header.Del(k)
	}
	if _, ok := configuredHeader(ep.Headers, "Host"); ok {
		req.Host = "" // the configured Host named the first server, not this one
	}
	return nil
}

func configuredHeader(h map[string]string, name string) (string, bool) {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// sameOrigin reports whether a and b have the same scheme, host and port,
// a missing port being the scheme's default.
func sameOrigin(a, b *url.URL) bool {
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

// refusedRedirect returns the reason a redirect answer was not followed, or
// "" when resp is no redirect fusebox refused.
func (ep *endpoint) refusedRedirect(resp *http.Response, redact func(string) string) string {
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
	policy := ep.Redirects
	if policy == "" {
		policy = RedirectsSameHost
	}
	return fmt.Sprintf("status %d: redirect to %s not followed (redirects: %s)", resp.StatusCode, redact(loc.String()), policy)
}

func joinPolicies() string {
	s := make([]string, len(RedirectPolicies))
	for k, p := range RedirectPolicies {
		s[k] = string(p)
	}
	return strings.Join(s, ", ")
}
