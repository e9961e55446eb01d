package status_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/mem"
	"github.com/fusebox-hq/fusebox/status"
)

var ctx = context.Background()

func TestSnapshotShowsCircuitsEndpointsAndChains(t *testing.T) {
	store := mem.New()
	now := breaker.Instant{Wall: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	c := fusebox.New(store, fusebox.WithClock(fixed(now)), fusebox.WithPolicy(fusebox.Policy{
		Retry: fusebox.RetryPolicy{Attempts: 1}, Breaker: breaker.Policy{TripAfter: 1, OpenFor: time.Minute},
	}))
	c.Do(ctx, "backup", func(context.Context) error { return nil })
	c.Do(ctx, "zigbee2mqtt", func(context.Context) error { return &fusebox.Failure{Reason: "connection refused"} })
	c.Do(ctx, "zigbee2mqtt", func(context.Context) error { return nil }) // skipped
	store.SaveAnswer(ctx, "weather", answers.Answer{Source: "wttr", StoredAt: now.Wall.Add(-time.Minute)})

	cat := status.Catalog{Endpoints: []string{"wttr", "zigbee2mqtt"}, Chains: map[string][]string{"weather": {"owm", "wttr"}}}
	rows, err := status.Snapshot(ctx, store, store, cat, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.Name+":"+r.Kind+":"+r.State)
	}
	want := "backup:circuit:closed weather:chain:chain wttr:endpoint:closed zigbee2mqtt:endpoint:open"
	if strings.Join(got, " ") != want {
		t.Fatalf("rows = %q, want %q", got, want)
	}
	z := rows[3]
	if z.TotalFailures != 1 || z.Skipped != 1 || z.LastFailure != "connection refused" || z.ReopensIn != time.Minute || z.OpenUntil == nil {
		t.Errorf("open circuit row = %+v", z)
	}
	if b := rows[0]; b.TotalSuccesses != 1 || b.LastSuccessAt == nil || !b.LastSuccessAt.Equal(now.Wall) {
		t.Errorf("healthy circuit row = %+v, want its success and when", b)
	}
	if w := rows[1]; w.LastSource != "wttr" || w.AnswerStoredAt == nil || strings.Join(w.Endpoints, ",") != "owm,wttr" {
		t.Errorf("chain row = %+v", w)
	}

	// The JSON form is the documented `status --json` document.
	b, _ := json.Marshal(rows[3])
	for _, field := range []string{`"name":"zigbee2mqtt"`, `"kind":"endpoint"`, `"state":"open"`, `"consecutive_failures":1`,
		`"opened_at":"2030-01-02T03:04:05Z"`, `"open_until":"2030-01-02T03:05:05Z"`, `"last_failure":"connection refused"`,
		`"total_failures":1`, `"total_successes":0`, `"skipped":1`} {
		if !strings.Contains(string(b), field) {
			t.Errorf("JSON %s lacks %s", b, field)
		}
	}

	var out bytes.Buffer
	if err := status.WriteTable(&out, rows, now.Wall); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"NAME", "zigbee2mqtt  open", "1m0s", "0s ago (connection refused)", "last answer from wttr, stored 1m ago"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, out.String())
		}
	}
}

func TestSnapshotOfNamedCircuitsOnly(t *testing.T) {
	store := mem.New()
	rows, err := status.Snapshot(ctx, store, nil, status.Catalog{}, []string{"never-seen"}, fusebox.WallClock{}.Now())
	if err != nil || len(rows) != 1 || rows[0].State != "closed" {
		t.Errorf("rows = %+v, %v", rows, err)
	}
	var out bytes.Buffer
	status.WriteTable(&out, nil, time.Now())
	if !strings.Contains(out.String(), "no circuits yet") {
		t.Errorf("empty table says %q", out.String())
	}
}

type fixed breaker.Instant

func (f fixed) Now() breaker.Instant { return breaker.Instant(f) }

// brokenStore is a store that cannot give one circuit's state, and
// another's counts.
type brokenStore struct {
	*mem.Store
	noState, noCounts string
}

func (b brokenStore) Load(ctx context.Context, name string) (breaker.State, error) {
	if name == b.noState {
		return breaker.State{}, errors.New("load " + name + ": permission denied")
	}
	return b.Store.Load(ctx, name)
}

func (b brokenStore) Counts(ctx context.Context, name string) (fusebox.Counts, error) {
	if name == b.noCounts {
		return fusebox.Counts{}, errors.New("read counts of " + name + ": permission denied")
	}
	return b.Store.Counts(ctx, name)
}

func TestSnapshotShowsEveryCircuitWhenOneCannotBeRead(t *testing.T) {
	store := brokenStore{Store: mem.New(), noState: "attic", noCounts: "garage"}
	for _, name := range []string{"attic", "garage", "kitchen"} {
		store.Count(ctx, name, fusebox.Counts{Successes: 2})
	}
	rows, err := status.Snapshot(ctx, store, nil, status.Catalog{}, nil, fusebox.WallClock{}.Now())
	if err != nil {
		t.Fatalf("Snapshot failed as a whole: %v", err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.Name+":"+r.State+":"+r.Problem)
	}
	want := "attic:unknown:load attic: permission denied garage:closed:read counts of garage: permission denied kitchen:closed:"
	if strings.Join(got, " ") != want {
		t.Errorf("rows = %q, want %q", got, want)
	}
}
