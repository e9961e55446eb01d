package metrics_test

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fusebox-hq/fusebox/metrics"
)

// Scrapes at once share the families read from the store (the daemon's
// /metrics): Write sorts copies, so it changes neither the slice it is
// given nor a family's samples, and writers at once write the same text.
// Before, each sorted them in place, a data race under two scrapes.
func TestWriteLeavesItsFamiliesAsTheyAre(t *testing.T) {
	b := metrics.New("fusebox_b", "gauge", "B.")
	b.Add(1, "name", "z")
	b.Add(2, "name", "a")
	a := metrics.New("fusebox_a", "counter", "A.")
	a.Add(3, "name", "y")
	a.Add(4, "name", "x")
	fams := []*metrics.Family{b, a}
	text := func() string {
		var w strings.Builder
		if err := metrics.Write(&w, fams); err != nil {
			t.Fatal(err)
		}
		return w.String()
	}
	first := text()
	if !slices.Equal(fams, []*metrics.Family{b, a}) {
		t.Errorf("Write reordered the slice it was given")
	}
	if want := "fusebox_a{name=\"x\"} 4\n"; !strings.Contains(first, want) || strings.Index(first, "fusebox_a") > strings.Index(first, "fusebox_b") {
		t.Fatalf("Write wrote:\n%s\nwant families and samples sorted", first)
	}
	// Writers at once (under -race, the sorts in place were a data race).
	var wg sync.WaitGroup
	texts := make([]string, 8)
	for i := range texts {
		wg.Go(func() { texts[i] = text() })
	}
	wg.Wait()
	for i, got := range texts {
		if got != first {
			t.Errorf("writer %d of 8 at once wrote:\n%s\nwant:\n%s", i, got, first)
		}
	}
}
