package httpcall

import (
	"context"
	"encoding/json"
	"errors"
)

// Condition is a jq condition, as expect: jq: is, for messages that come
// by other ways than an HTTP answer (fusebox serve's MQTT health watch).
// It is safe for concurrent use.
type Condition struct{ p *jqProgram }

// NewCondition returns up as a condition: up compiled, as an endpoint
// compiles its expect: jq: (see JQ.compiled).
func NewCondition(up JQ) (*Condition, error) {
	p, err := up.compiled()
	if err != nil {
		return nil, err
	}
	return &Condition{p: p}, nil
}

// Holds reports whether the condition holds for msg, under expect: jq:'s
// bounds: it gave at least one output and none was false or null. A msg
// that is not JSON is judged as a JSON string of its text (offline is
// "offline").
func (c *Condition) Holds(ctx context.Context, msg []byte) (bool, error) {
	v, err := decodeJSON(msg)
	body := msg
	switch {
	case errors.Is(err, errNotJSON):
		v = string(msg)
		body, _ = json.Marshal(v)
	case err != nil:
		return false, err
	}
	out, err := evaluate(ctx, &jqInput{body: body, v: v, decoded: true}, c.p, false, jqMaxCondition)
	return err == nil && string(out) == "true", err
}
