package httpcall

import "github.com/fusebox-hq/fusebox/spec"

// What a Client calls is described by the plain specs config produces
// (package spec): New compiles them into its endpoints and chains.
type (
	Endpoint  = spec.Endpoint
	Chain     = spec.Chain
	Health    = spec.Health
	Expect    = spec.Expect
	RetryOn   = spec.RetryOn
	Redirects = spec.Redirects
)

// Defaults and values of the specs, under the names httpcall has always
// given them.
const (
	DefaultMaxBody        = spec.DefaultMaxBody
	DefaultHealthInterval = spec.DefaultHealthInterval
	RedirectsSameHost     = spec.RedirectsSameHost
	RedirectsNone         = spec.RedirectsNone
	RedirectsAny          = spec.RedirectsAny
)

// RedirectPolicies are the values of Redirects, for messages.
var RedirectPolicies = spec.RedirectPolicies

// DefaultRetryOn retries what is usually passing: connection failures,
// timeouts, 5xx and 429 (spec.DefaultRetryOn).
func DefaultRetryOn() RetryOn { return spec.DefaultRetryOn() }
