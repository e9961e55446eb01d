package httpcall

// RaceBuild says the tests run under the race detector, whose jq child
// process has no address-space limit.
const RaceBuild = raceBuild

// RunsCompiled reports whether the client's endpoint name runs expect and
// extract as they were compiled, not compiled again.
func (c *Client) RunsCompiled(name string, expect, extract JQ) bool {
	ep := c.endpoints[name]
	return ep.expect == expect.p && ep.extract == extract.p
}

// RunsCompiled reports whether the condition runs up as it was compiled.
func (c *Condition) RunsCompiled(up JQ) bool { return c.p == up.p }

// IsCompiled reports whether j holds a compiled program.
func (j JQ) IsCompiled() bool { return j.p != nil }
