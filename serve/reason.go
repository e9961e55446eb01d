package serve

import (
	"strconv"
	"strings"
)

// The reason kinds of fusebox_failures_by_reason_total.
const (
	ReasonTimeout   = "timeout" // an attempt timeout or a deadline cut it
	ReasonStatus5xx = "status_5xx"
	ReasonStatus429 = "status_429"
	ReasonStatus4xx = "status_4xx"
	ReasonStatus    = "status_other" // a status outside expect.status
	ReasonConnect   = "connect"      // refused, reset, closed, no response
	ReasonDNS       = "dns"
	ReasonTLS       = "tls"
	ReasonLocal     = "local_network"
	ReasonBody      = "body"  // too large, cut short, not JSON
	ReasonCheck     = "check" // expect.jq false, extract failed
	ReasonExit      = "exit"  // fusebox run: the command failed
	ReasonOther     = "other"
)

// reasonKind sorts a stored failure reason into a few kinds a dashboard can
// group by. Stored events carry the reason as text, written by
// fusebox.AttemptError (the cut: "timeout after 5s: ...") around httpcall's
// judge and package command; the kinds follow their wording.
func reasonKind(reason string) string {
	r := reason
	switch {
	case strings.HasPrefix(r, "timeout after "), strings.Contains(r, "deadline") && strings.Contains(r, "reached"):
		return ReasonTimeout
	case strings.HasPrefix(r, "status "):
		code, err := strconv.Atoi(strings.Fields(r[len("status "):] + " x")[0])
		switch {
		case err != nil:
			return ReasonOther
		case strings.Contains(r, " not in "):
			return ReasonStatus
		case code == 429:
			return ReasonStatus429
		case code >= 500:
			return ReasonStatus5xx
		case code >= 400:
			return ReasonStatus4xx
		}
		return ReasonStatus
	case strings.HasPrefix(r, "local network"):
		return ReasonLocal
	case strings.HasPrefix(r, "DNS"):
		return ReasonDNS
	case strings.HasPrefix(r, "TLS"):
		return ReasonTLS
	case strings.HasPrefix(r, "connection "), r == "could not connect", r == "no response":
		return ReasonConnect
	case strings.HasPrefix(r, "body "), strings.HasPrefix(r, "reading the body"), strings.Contains(r, "not JSON"), strings.Contains(r, "invalid JSON"):
		return ReasonBody
	case strings.HasPrefix(r, "expect.jq "), strings.HasPrefix(r, "extract "):
		return ReasonCheck
	case strings.HasPrefix(r, "exit status "), strings.HasPrefix(r, "killed by signal "):
		return ReasonExit
	}
	return ReasonOther
}
