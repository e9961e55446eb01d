package serve

import "testing"

func TestReasonKind(t *testing.T) {
	for reason, want := range map[string]string{
		"status 503":                                 ReasonStatus5xx,
		"status 429 (retry after 30s)":               ReasonStatus429,
		"status 404":                                 ReasonStatus4xx,
		"status 302 not in [200]":                    ReasonStatus,
		"timeout after 5s: no response":              ReasonTimeout,
		"deadline of 1m0s reached: connection reset": ReasonTimeout,
		"chain deadline of 20s reached: no response": ReasonTimeout,
		"connection refused":                         ReasonConnect,
		"connection closed before the response":      ReasonConnect,
		"no response":                                ReasonConnect,
		"DNS: no such host nas.lan":                  ReasonDNS,
		"TLS: x509: certificate signed by unknown":   ReasonTLS,
		"local network: network unreachable":         ReasonLocal,
		"body larger than 10 bytes":                  ReasonBody,
		"body is not JSON":                           ReasonBody,
		`expect.jq ".ok" was false`:                  ReasonCheck,
		`extract ".x": cannot iterate`:               ReasonCheck,
		"exit status 3":                              ReasonExit,
		"killed by signal 9 (SIGKILL)":               ReasonExit,
		"something new":                              ReasonOther,
		"status teapot":                              ReasonOther,
		"":                                           ReasonOther,
	} {
		if got := reasonKind(reason); got != want {
			t.Errorf("reasonKind(%q) = %q, want %q", reason, got, want)
		}
	}
}
