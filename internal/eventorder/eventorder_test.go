package eventorder_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/eventorder"
)

// Sort interleaves circuits by time but never reorders one circuit's
// events: one stored after a clock stepped back stays after those before it.
func TestSortKeepsEachCircuitsOrder(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC)
	ev := func(name string, min int, reason string) breaker.Event {
		return breaker.Event{Time: t0.Add(time.Duration(min) * time.Minute), Circuit: name, Reason: reason}
	}
	events := []breaker.Event{ // as a store reads them: each circuit's log in turn
		ev("nas", 10, "opened"), ev("nas", 12, "probe failed"), ev("nas", -50, "closed, the clock stepped back"), ev("nas", 20, "failed"),
		ev("api", 5, "a"), ev("api", 11, "b"), ev("api", 15, "c"),
	}
	eventorder.Sort(events)
	var got []string
	for _, e := range events {
		got = append(got, fmt.Sprintf("%s:%s", e.Circuit, e.Reason))
	}
	want := "api:a nas:opened api:b nas:probe failed nas:closed, the clock stepped back api:c nas:failed"
	if strings.Join(got, " ") != want {
		t.Errorf("sorted:\n%s\nwant:\n%s", strings.Join(got, " "), want)
	}
}
