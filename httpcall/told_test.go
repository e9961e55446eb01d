package httpcall

import "testing"

// A call's failure is told already when each endpoint's was: skipped, a
// failed probe, or overtaken by the failure that opened its circuit. One
// endpoint whose failure is news makes the whole call news.
func TestCallErrorTold(t *testing.T) {
	for _, tc := range []struct {
		name string
		errs []EndpointError
		want bool
	}{
		{"all skipped", []EndpointError{{Name: "a", Skipped: true}, {Name: "b", Skipped: true}}, true},
		{"failed probe", []EndpointError{{Name: "a", Reopened: true}}, true},
		{"overtaken", []EndpointError{{Name: "a", Overtaken: true}}, true},
		{"overtaken then skipped", []EndpointError{{Name: "a", Overtaken: true}, {Name: "b", Skipped: true}}, true},
		{"a new failure", []EndpointError{{Name: "a"}}, false},
		{"skipped then a new failure", []EndpointError{{Name: "a", Skipped: true}, {Name: "b"}}, false},
	} {
		if got := (&CallError{Name: "x", Errors: tc.errs}).Told(); got != tc.want {
			t.Errorf("%s: Told() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
