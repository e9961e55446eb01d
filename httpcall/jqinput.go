package httpcall

import (
	"context"
	"fmt"
)

// jqInput is a body that jq programs run on, and its share of a JQMemory.
// The value decoded from the body counts against the bound from before it
// is decoded until the last program on it ends, at the cost jsonShape
// estimates, together with the share of the program running in-process
// on it. Both are taken in one step, and a larger share is taken only
// after what is held is given back (the decoded value with it), so callers
// never hold part of the bound while they wait for more: they wait, or
// fail at their attempt's end, as a jq program's share does. A program run
// in a child decodes the body itself: the value and its share are let go
// first. With no JQMemory (mem nil), nothing is counted or let go. It is
// not safe for concurrent use.
type jqInput struct {
	mem     *JQMemory
	body    []byte
	v       any
	decoded bool
	cost    int64 // the decoded value's, once jsonShape has said it; 0 before
	held    int64
	release func()
}

// value returns the body decoded, holding, besides its cost, share bytes
// for the program about to run on it. A body whose decoded value alone
// would take more than one jq program may use is not decoded.
func (j *jqInput) value(ctx context.Context, share int64) (any, error) {
	if j.decoded && j.mem == nil {
		return j.v, nil
	}
	if j.cost == 0 {
		depth, cost := jsonShape(j.body, maxJSONDepth)
		switch {
		case depth > maxJSONDepth:
			return nil, errTooDeep
		case cost > jqMemory:
			return nil, fmt.Errorf("body would take about %d MiB decoded, more than the %d MiB a jq program may use", cost>>20, jqMemory>>20)
		}
		j.cost = cost
	}
	if err := j.hold(ctx, j.cost+share); err != nil {
		return nil, err
	}
	if !j.decoded {
		v, err := decodeJSON(j.body)
		if err != nil {
			return nil, err
		}
		j.v, j.decoded = v, true
	}
	return j.v, nil
}

// hold makes at least n bytes of mem held: what is held already when it
// is enough, else n, taken once what was held is let go.
func (j *jqInput) hold(ctx context.Context, n int64) error {
	if j.mem == nil || j.held >= n {
		return nil
	}
	j.letGo()
	release, err := j.mem.acquire(ctx, n)
	if err != nil {
		return err
	}
	j.release, j.held = release, n
	return nil
}

// letGo gives back what is held, and the decoded value counted in it.
func (j *jqInput) letGo() {
	if j.mem == nil {
		return
	}
	if j.release != nil {
		j.release()
	}
	j.release, j.held = nil, 0
	j.v, j.decoded = nil, false
}
