package file_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
)

var budget = fusebox.RetryBudget{Percent: 0, Min: 2, Window: time.Minute}

func TestBudgetFileCutShortReadsAsAnEmptyBudget(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	now := time.Now()
	for range 2 {
		if got, err := s.SpendBudget(ctx, "api", budget, now, true); err != nil || !got.Allowed {
			t.Fatalf("SpendBudget: %+v, %v", got, err)
		}
	}
	path := filepath.Join(dir, ".counts", "api.budget")
	if err := os.Truncate(path, 12); err != nil { // the header and half a time: a crash mid-write
		t.Fatal(err)
	}
	got, err := s.SpendBudget(ctx, "api", budget, now, true)
	if err != nil || got != (fusebox.BudgetSpend{Allowed: true, Retries: 1}) {
		t.Fatalf("a retry after the budget file was cut short: %+v, %v; want allowed as the first of an empty budget", got, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 8+8 {
		t.Fatalf("the budget file after one retry: %v, %v; want 16 bytes", fi, err)
	}
}

func TestGCRemovesABudgetWithItsCircuit(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	if err := s.Count(ctx, "api", fusebox.Counts{Failures: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SpendBudget(ctx, "api", budget, time.Now(), false); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ".counts", "api.budget")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no budget file after a spend: %v", err)
	}
	if _, err := s.GC(ctx, time.Now().Add(30*24*time.Hour), time.Hour, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("GC of an unused circuit left its budget file: %v", err)
	}
}
