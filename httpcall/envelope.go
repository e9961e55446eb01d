package httpcall

import (
	"bytes"
	"encoding/json"
	"math"
)

// envelope is the JSON form of a Result (fusebox call --json).
type envelope struct {
	Source     *string         `json:"source"`             // null when nothing answered
	Answered   string          `json:"answered,omitempty"` // for fresh and stale
	Status     *int            `json:"status"`
	Attempts   int             `json:"attempts"`
	AgeSeconds *float64        `json:"age_seconds,omitempty"` // only for answers from the store
	Body       json.RawMessage `json:"body"`
	Errors     []envelopeError `json:"errors"`
}

type envelopeError struct {
	Name      string `json:"name"`
	Reason    string `json:"reason"`
	Skipped   bool   `json:"skipped,omitempty"`
	Cancelled bool   `json:"cancelled,omitempty"` // a hedge another endpoint's answer beat
}

// Envelope returns r as one JSON object: source, status, attempts,
// age_seconds (only when answered from the store), body (the parsed JSON
// when Body is valid JSON, else a string) and errors (a list of name and
// reason, never null; skipped marks an open circuit, cancelled a hedge
// another endpoint's answer beat). When nothing answered, source, status
// and body are null.
func (r *Result) Envelope() ([]byte, error) {
	e := envelope{Attempts: r.Attempts, Errors: []envelopeError{}, Body: json.RawMessage("null")}
	if r.Source != "" {
		e.Source, e.Status = &r.Source, &r.Status
		if r.Source != r.Answered {
			e.Answered = r.Answered
		}
		body, err := bodyJSON(r.Body)
		if err != nil {
			return nil, err
		}
		e.Body = body
	}
	if r.Source == SourceFresh || r.Source == SourceStale {
		age := math.Round(r.Age.Seconds()*1000) / 1000
		e.AgeSeconds = &age
	}
	for _, ee := range r.Errors {
		e.Errors = append(e.Errors, envelopeError{Name: ee.Name, Reason: ee.Reason, Skipped: ee.Skipped, Cancelled: ee.Cancelled})
	}
	return json.Marshal(e)
}

func bodyJSON(body []byte) (json.RawMessage, error) {
	if json.Valid(body) {
		var b bytes.Buffer
		if err := json.Compact(&b, body); err == nil {
			return b.Bytes(), nil
		}
	}
	return json.Marshal(string(body))
}
