package httpcall_test

import (
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/httpcall"
)

func TestEnvelope(t *testing.T) {
	tests := []struct {
		name string
		res  httpcall.Result
		want string
	}{
		{
			"JSON body is embedded",
			httpcall.Result{Source: "owm", Answered: "owm", Status: 200, Attempts: 2, Body: []byte("{\n  \"temp\": 21.5\n}\n"),
				Errors: []httpcall.EndpointError{{Name: "ha", Reason: "circuit open (probe in 25s)", Skipped: true}}},
			`{"source":"owm","status":200,"attempts":2,"body":{"temp":21.5},"errors":[{"name":"ha","reason":"circuit open (probe in 25s)","skipped":true}]}`,
		},
		{
			"text body is a string",
			httpcall.Result{Source: "wttr", Answered: "wttr", Status: 200, Attempts: 1, Body: []byte("Paris: +21°C\n")},
			`{"source":"wttr","status":200,"attempts":1,"body":"Paris: +21°C\n","errors":[]}`,
		},
		{
			"several extracted lines are a string",
			httpcall.Result{Source: "a", Answered: "a", Status: 200, Attempts: 1, Body: []byte("1\n2")},
			`{"source":"a","status":200,"attempts":1,"body":"1\n2","errors":[]}`,
		},
		{
			"stale answer has its age",
			httpcall.Result{Source: "stale", Answered: "owm", Status: 200, Attempts: 3, Age: 90*time.Second + 250*time.Millisecond, Body: []byte("21.5"),
				Errors: []httpcall.EndpointError{{Name: "owm", Reason: "connection refused"}}},
			`{"source":"stale","answered":"owm","status":200,"attempts":3,"age_seconds":90.25,"body":21.5,"errors":[{"name":"owm","reason":"connection refused"}]}`,
		},
		{
			"nothing answered",
			httpcall.Result{Attempts: 3, Errors: []httpcall.EndpointError{{Name: "owm", Reason: "connection refused"}}},
			`{"source":null,"status":null,"attempts":3,"body":null,"errors":[{"name":"owm","reason":"connection refused"}]}`,
		},
		{
			"empty body",
			httpcall.Result{Source: "a", Answered: "a", Status: 204, Attempts: 1},
			`{"source":"a","status":204,"attempts":1,"body":"","errors":[]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.res.Envelope()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Envelope\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}
