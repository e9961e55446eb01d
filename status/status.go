// Package status takes snapshots of circuits, endpoints and chains: what
// `fusebox status` prints, as a table or as JSON, and what the daemon's
// /api/circuits, status page and metrics show. A Row's JSON form is a
// documented interface (docs/status.md, `status --json`): fields are added,
// never renamed or removed.
package status

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/breaker"
)

// StateUnknown is the State of a circuit whose state could not be read:
// its Row's Problem says why.
const StateUnknown = "unknown"

// The kinds of Row.
const (
	KindCircuit  = "circuit"  // a circuit only a command (fusebox run) or the library uses
	KindEndpoint = "endpoint" // a circuit with an HTTP endpoint in the config
	KindChain    = "chain"    // a fallback chain of endpoints; it has no circuit of its own
)

// Row is one circuit, endpoint or chain as of a moment.
type Row struct {
	Name                string     `json:"name"`
	Kind                string     `json:"kind"`  // KindCircuit, KindEndpoint or KindChain
	State               string     `json:"state"` // a breaker.Phase, "chain", or StateUnknown
	ConsecutiveFailures int        `json:"consecutive_failures"`
	OpenedAt            *time.Time `json:"opened_at,omitempty"`
	OpenUntil           *time.Time `json:"open_until,omitempty"`
	LastFailureAt       *time.Time `json:"last_failure_at,omitempty"`
	LastFailure         string     `json:"last_failure,omitempty"`
	LastSuccessAt       *time.Time `json:"last_success_at,omitempty"`
	TotalFailures       uint64     `json:"total_failures"`
	TotalSuccesses      uint64     `json:"total_successes"`
	Skipped             uint64     `json:"skipped"`
	Endpoints           []string   `json:"endpoints,omitempty"`
	LastSource          string     `json:"last_source,omitempty"`
	AnswerStoredAt      *time.Time `json:"answer_stored_at,omitempty"`
	// Problem says why the circuit's state or counts could not be read
	// (the fields it would have set are then unknown, and zero); the
	// other rows are whole.
	Problem string `json:"problem,omitempty"`

	// ReopensIn is how long an open circuit has before it may be probed
	// (0 when closed, half-open, or forced open until reset).
	ReopensIn time.Duration `json:"-"`
}

// Catalog says which names a config defines as endpoints and as chains, so
// that rows can say which is which and list them before their first call.
type Catalog struct {
	Endpoints []string
	Chains    map[string][]string // each chain's endpoints, in order
}

// Snapshot returns the rows of names, or, with no names, of every circuit the
// store holds and every endpoint and chain of cat, sorted by name. A chain's
// row shows its last stored answer when answers is not nil. A circuit whose
// state or counts the store cannot give has a row with a Problem; Snapshot
// fails only when the store cannot list its circuits.
func Snapshot(ctx context.Context, store fusebox.Admin, answers answers.Store, cat Catalog, names []string, now breaker.Instant) ([]Row, error) {
	if len(names) == 0 {
		stored, err := store.Names(ctx)
		if err != nil {
			return nil, fmt.Errorf("list circuits: %w", err)
		}
		names = append(stored, cat.Endpoints...)
		for n := range cat.Chains {
			names = append(names, n)
		}
		slices.Sort(names)
		names = slices.Compact(names)
	}
	rows := make([]Row, 0, len(names))
	for _, name := range names {
		if eps, ok := cat.Chains[name]; ok {
			rows = append(rows, chainRow(ctx, answers, name, eps))
			continue
		}
		row := circuitRow(ctx, store, name, now)
		if slices.Contains(cat.Endpoints, name) {
			row.Kind = KindEndpoint
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// circuitRow is the row of the circuit name as the store has it.
func circuitRow(ctx context.Context, store fusebox.Admin, name string, now breaker.Instant) Row {
	st, err := store.Load(ctx, name)
	if err != nil {
		return Row{Name: name, Kind: KindCircuit, State: StateUnknown, Problem: err.Error()}
	}
	counts, err := store.Counts(ctx, name)
	row := CircuitRow(st, counts, now)
	if err != nil {
		row.Problem = err.Error()
	}
	return row
}

// CircuitRow is the row of one circuit from its state and counts.
func CircuitRow(st breaker.State, c fusebox.Counts, now breaker.Instant) Row {
	v := st.View(now)
	row := Row{
		Name: st.Name, Kind: KindCircuit, State: string(v.Phase),
		ConsecutiveFailures: st.ConsecutiveFailures,
		LastFailureAt:       timePtr(st.LastFailureAt),
		LastFailure:         st.LastFailure,
		LastSuccessAt:       timePtr(c.LastSuccess),
		TotalFailures:       c.Failures,
		TotalSuccesses:      c.Successes,
		Skipped:             c.Skips,
		ReopensIn:           v.ReopensIn,
	}
	if v.Phase != breaker.Closed {
		row.OpenedAt = timePtr(st.OpenedAt.Wall)
		row.OpenUntil = timePtr(v.OpenUntil)
	}
	return row
}

func chainRow(ctx context.Context, answers answers.Store, name string, endpoints []string) Row {
	row := Row{Name: name, Kind: KindChain, State: KindChain, Endpoints: slices.Clone(endpoints)}
	if answers == nil {
		return row
	}
	if a, ok, err := answers.LoadAnswer(ctx, name); err == nil && ok {
		row.LastSource = a.Source
		row.AnswerStoredAt = timePtr(a.StoredAt)
	}
	return row
}

// timePtr is t to the second in UTC, or nil when t is unknown.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC().Truncate(time.Second)
	return &t
}
