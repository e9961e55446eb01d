package httpcall

import "github.com/fusebox-hq/fusebox/breaker"

// The causes of a failed request (breaker.Cause), besides breaker.CauseTimeout
// and breaker.CauseOther: what fusebox_failures_by_reason_total groups by.
const (
	CauseStatus5xx breaker.Cause = "status_5xx"
	CauseStatus429 breaker.Cause = "status_429"
	CauseStatus4xx breaker.Cause = "status_4xx"
	CauseStatus    breaker.Cause = "status_other" // a status outside expect.status, a redirect not followed
	CauseConnect   breaker.Cause = "connect"      // refused, reset, closed before the response
	CauseDNS       breaker.Cause = "dns"
	CauseTLS       breaker.Cause = "tls"
	CauseLocal     breaker.Cause = "local_network"
	CauseBody      breaker.Cause = "body"  // too large, cut short, not JSON
	CauseCheck     breaker.Cause = "check" // expect.jq false, extract failed
)
