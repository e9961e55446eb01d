package statestore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/statestore"
)

func TestOpenFailsOpenWithTheReason(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	store := statestore.Open(statestore.Options{Dir: notDir})
	reason := statestore.Reason(store)
	if reason == nil {
		t.Fatal("a state dir that is a file opened as a working store")
	}
	if _, err := store.Load(context.Background(), "api"); !errors.Is(err, reason) {
		t.Errorf("Load = %v, want the reason %v", err, reason)
	}
	// The call still runs, once, with one warning.
	ran := 0
	c := fusebox.New(store)
	if err := c.Do(context.Background(), "api", func(context.Context) error { ran++; return nil }); err != nil || ran != 1 {
		t.Errorf("Do on an unavailable store = %v, ran %d times; want the call run once", err, ran)
	}
}

func TestOpenReturnsAWorkingStore(t *testing.T) {
	store := statestore.Open(statestore.Options{Dir: filepath.Join(t.TempDir(), "state"), Fsync: true})
	defer store.Close()
	if err := statestore.Reason(store); err != nil {
		t.Fatalf("Reason = %v for a fresh dir", err)
	}
	if _, ok := store.(answers.Store); !ok {
		t.Error("the state store keeps no answers")
	}
}

func TestOpenForReadingLeavesAMissingStateDirMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	store := statestore.Open(statestore.Options{Dir: dir, ReadOnly: true})
	defer store.Close()
	ctx := context.Background()
	names, err := store.PeekNames(ctx)
	if err != nil || len(names) != 0 {
		t.Errorf("PeekNames = %q, %v; want none", names, err)
	}
	if st, c, err := store.Peek(ctx, "api"); err != nil || st.Phase != "" && st.Phase != breaker.Closed || c != (fusebox.Counts{}) {
		t.Errorf("Peek = %+v, %+v, %v; want a closed circuit with nothing counted", st, c, err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the state dir after reading: %v; want it not there", err)
	}
}
