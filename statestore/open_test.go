package statestore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
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
