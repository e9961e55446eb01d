package file_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
)

func TestLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s := open(t, dir)
	now := fusebox.Instant{Wall: time.Now()}
	p := fusebox.DefaultPolicy().Breaker
	if _, err := s.Update(ctx, "db", func(st *fusebox.State) ([]fusebox.Event, bool) {
		evs := st.Record(p, now, fusebox.Permit{Generation: st.Generation}, fusebox.Outcome{Failed: true, Attempt: 1, Reason: "refused"})
		return evs, true
	}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := s.RecordSkip(ctx, "db"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SaveAnswer(ctx, "weather", fusebox.Answer{Source: "primary", StoredAt: time.Now(), Body: []byte("sunny")}); err != nil {
		t.Fatal(err)
	}

	want := []string{".gc", ".locks", ".locks/db.lock", ".skips", ".skips/db.skips", "answers", "answers/weather.json", "db.json", "events", "events/db.jsonl"}
	if got := ls(t, dir); !slices.Equal(got, want) {
		t.Errorf("the dir holds\n%q\nwant\n%q", got, want)
	}
	for path, mode := range map[string]os.FileMode{
		"": 0o700, ".locks": 0o700, ".skips": 0o700, "answers": 0o700, "events": 0o700,
		"db.json": 0o600, "events/db.jsonl": 0o600, ".skips/db.skips": 0o600, ".locks/db.lock": 0o600, "answers/weather.json": 0o600,
	} {
		fi, err := os.Stat(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s has mode %s, want %s", filepath.Join("DIR", path), fi.Mode().Perm(), mode)
		}
	}

	b := readFile(t, filepath.Join(dir, "db.json"))
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil || doc["state"] != "closed" || doc["name"] != "db" {
		t.Errorf("db.json = %s (%v), want JSON with \"state\": \"closed\"", b, err)
	}
	if !strings.Contains(string(b), "\n  \"state\": \"closed\",\n") {
		t.Errorf("db.json is not indented for people:\n%s", b)
	}
	if lines := strings.Count(string(readFile(t, filepath.Join(dir, "events", "db.jsonl"))), "\n"); lines != 1 {
		t.Errorf("events/db.jsonl has %d lines, want 1", lines)
	}
	if got := readFile(t, filepath.Join(dir, ".skips", "db.skips")); len(got) != 3 {
		t.Errorf(".skips/db.skips holds %q, want 3 bytes", got)
	}
}

func TestLoadWritesNothing(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	writeFile(t, filepath.Join(dir, "db.json"), []byte(`{"name":"db","state":"open","total_failures":3}`))
	st, err := s.Load(ctx, "db")
	if err != nil || st.Phase != fusebox.Open || st.TotalFailures != 3 {
		t.Errorf("Load = %+v, %v; want the stored state", st, err)
	}
	if _, err := s.Load(ctx, "unknown"); err != nil {
		t.Fatal(err)
	}
	if got := ls(t, dir); !slices.Equal(got, []string{"db.json"}) {
		t.Errorf("after Load the dir holds %q, want only db.json: Load must take no lock", got)
	}
}

func TestLoadSetsTheName(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "db.json"), []byte(`{"name":"copied-from-elsewhere","state":"closed"}`))
	if st, err := open(t, dir).Load(ctx, "db"); err != nil || st.Name != "db" {
		t.Errorf("Load = %+v, %v; want Name db", st, err)
	}
}

func TestUnchangedUpdateWritesNoState(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	if _, err := s.Update(ctx, "db", func(*fusebox.State) ([]fusebox.Event, bool) { return nil, false }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "db.json")); !os.IsNotExist(err) {
		t.Errorf("db.json exists after an unchanged update (%v)", err)
	}
}

func TestNames(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	for _, name := range []string{"db", "...", ".hidden"} {
		mustUpdate(t, s, name)
	}
	for _, junk := range []string{".db.json.tmp-123-abc", "db.json" + corruptSuffix, "README", "bad name.json", "x.jsonl"} {
		writeFile(t, filepath.Join(dir, junk), []byte("{}"))
	}
	if err := os.Mkdir(filepath.Join(dir, "subdir.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	want := []string{"...", ".hidden", "db"}
	if got, err := s.Names(ctx); err != nil || !slices.Equal(got, want) {
		t.Errorf("Names = %q, %v; want %q", got, err, want)
	}
}

func TestInvalidNamesAreRefused(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	for _, name := range []string{"", ".", "..", "../escape", "a/b", "with space", strings.Repeat("x", 65)} {
		if _, err := s.Load(ctx, name); err == nil {
			t.Errorf("Load(%q) succeeded", name)
		}
		if _, err := s.Update(ctx, name, succeed); err == nil {
			t.Errorf("Update(%q) succeeded", name)
		}
		if err := s.RecordSkip(ctx, name); err == nil {
			t.Errorf("RecordSkip(%q) succeeded", name)
		}
		if err := s.SaveAnswer(ctx, name, fusebox.Answer{}); err == nil {
			t.Errorf("SaveAnswer(%q) succeeded", name)
		}
	}
	if got := ls(t, filepath.Dir(dir)); !slices.Equal(got, []string{filepath.Base(dir)}) {
		t.Errorf("files appeared outside the dir: %q", got)
	}
	if got := ls(t, dir); len(got) != 0 {
		t.Errorf("files appeared in the dir: %q", got)
	}
}
