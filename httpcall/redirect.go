package httpcall

import (
	"net/http"
	"strings"

	"github.com/fusebox-hq/fusebox/redirect"
)

// checkRedirect is ep's http.Client.CheckRedirect: it follows a hop only as
// ep.Redirects allows, and strips what must not travel with it (the policy
// notifications follow too: internal/redirect).
func (ep *endpoint) checkRedirect(req *http.Request, via []*http.Request) error {
	return redirect.Check(redirect.Policy(ep.Redirects), ep.Headers)(req, via)
}

// refusedRedirect returns the reason a redirect answer was not followed, or
// "" when resp is no redirect fusebox refused.
func (ep *endpoint) refusedRedirect(resp *http.Response, redact func(string) string) string {
	return redirect.Refused(redirect.Policy(ep.Redirects), resp, redact)
}

func joinPolicies() string {
	s := make([]string, len(redirect.Policies))
	for k, p := range redirect.Policies {
		s[k] = string(p)
	}
	return strings.Join(s, ", ")
}
