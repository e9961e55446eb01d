package file_test

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/breaker"
)

func TestLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s := open(t, dir)
	now := breaker.Instant{Wall: time.Now()}
	p := fusebox.Policy{}.WithDefaults().Breaker
	if _, err := s.Update(ctx, "db", func(st *breaker.State) ([]breaker.Event, bool) {
		evs := st.Record(p, now, breaker.Permit{Generation: st.Generation}, breaker.Outcome{Failed: true, Attempt: 1, Reason: "refused"})
		return evs, true
	}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := s.Count(ctx, "db", fusebox.Counts{Skips: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SaveAnswer(ctx, "weather", answers.Answer{Source: "primary", StoredAt: time.Now(), Body: []byte("sunny")}); err != nil {
		t.Fatal(err)
	}

	want := []string{".counts", ".counts/db.counts", ".gc", ".locks", ".locks/db.lock", "answers", "answers/weather.json", "db.json", "events", "events/db.jsonl"}
	if got := ls(t, dir); !slices.Equal(got, want) {
		t.Errorf("the dir holds\n%q\nwant\n%q", got, want)
	}
	for path, mode := range map[string]os.FileMode{
		"": 0o700, ".locks": 0o700, ".counts": 0o700, "answers": 0o700, "events": 0o700,
		"db.json": 0o600, "events/db.jsonl": 0o600, ".counts/db.counts": 0o600, ".locks/db.lock": 0o600, "answers/weather.json": 0o600,
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
	if got := readFile(t, filepath.Join(dir, ".counts", "db.counts")); len(got) != 32 {
		t.Errorf(".counts/db.counts holds %d bytes, want four 64-bit words", len(got))
	}
	if c, err := s.Counts(ctx, "db"); err != nil || c.Skips != 3 {
		t.Errorf("Counts = %+v, %v; want 3 skips", c, err)
	}
}

func TestLoadWritesNothing(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	writeFile(t, filepath.Join(dir, "db.json"), []byte(`{"name":"db","state":"open","consecutive_failures":3}`))
	st, err := s.Load(ctx, "db")
	if err != nil || st.Phase != breaker.Open || st.ConsecutiveFailures != 3 {
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
	if _, err := s.Update(ctx, "db", func(*breaker.State) ([]breaker.Event, bool) { return nil, false }); err != nil {
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
		if err := s.Count(ctx, name, fusebox.Counts{Skips: 1}); err == nil {
			t.Errorf("Count(%q) succeeded", name)
		}
		if err := s.SaveAnswer(ctx, name, answers.Answer{}); err == nil {
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

func TestCountTakesNoLockAndWritesNoState(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	for range 3 {
		if err := s.Count(ctx, "healthy", fusebox.Counts{Successes: 1, LastSuccess: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	// .gc is the mark of the hourly automatic GC, which a success may run.
	if got := ls(t, dir); !slices.Equal(got, []string{".counts", ".counts/healthy.counts", ".gc"}) {
		t.Errorf("after Count the dir holds %q, want only the counts file (and .gc): no lock, no state, no event", got)
	}
	if names, err := s.Names(ctx); err != nil || !slices.Equal(names, []string{"healthy"}) {
		t.Errorf("Names = %q, %v; want the counted circuit", names, err)
	}
}

func TestCountsOfAShortOrForeignCountsFile(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	if err := os.MkdirAll(filepath.Join(dir, ".counts"), 0o700); err != nil {
		t.Fatal(err)
	}
	// A file cut short keeps the words it has; the next Count extends it.
	writeFile(t, filepath.Join(dir, ".counts", "db.counts"), []byte{5, 0, 0, 0, 0, 0, 0, 0, 1})
	if c, err := s.Counts(ctx, "db"); err != nil || c.Successes != 5 || c.Failures != 0 {
		t.Fatalf("Counts of a short file = %+v, %v; want 5 successes", c, err)
	}
	if err := s.Count(ctx, "db", fusebox.Counts{Successes: 1, Skips: 2}); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Counts(ctx, "db"); err != nil || c.Successes != 6 || c.Skips != 2 {
		t.Errorf("Counts after extending = %+v, %v; want 6 successes and 2 skips", c, err)
	}
	// A directory in its place is moved aside, not counted into.
	if err := os.Mkdir(filepath.Join(dir, ".counts", "dir.counts"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s.Count(ctx, "dir", fusebox.Counts{Skips: 1}); err != nil {
		t.Fatalf("Count with a directory in place of the file: %v", err)
	}
	if c, err := s.Counts(ctx, "dir"); err != nil || c.Skips != 1 {
		t.Errorf("Counts = %+v, %v; want the 1 skip in a new file", c, err)
	}
	if moved, _ := filepath.Glob(filepath.Join(dir, ".counts", "dir.counts.corrupt-*")); len(moved) != 1 {
		t.Errorf("the directory was not moved aside: %v", moved)
	}
}

// A Store keeps a circuit's counters file mapped between Counts; when the
// file is removed (gc) or replaced under it, the next Count maps the new one
// and nothing is counted into the old.
func TestCountFollowsACountsFileRemovedOrReplaced(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	path := filepath.Join(dir, ".counts", "db.counts")
	count := func() {
		t.Helper()
		if err := s.Count(ctx, "db", fusebox.Counts{Skips: 1}); err != nil {
			t.Fatal(err)
		}
	}
	count()
	count()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	count()
	if c, err := s.Counts(ctx, "db"); err != nil || c.Skips != 1 {
		t.Errorf("after the file was removed: %+v, %v; want the 1 skip counted since", c, err)
	}
	// Replaced by a copy holding 40 skips (a restore from a backup).
	other := filepath.Join(dir, "other")
	b := make([]byte, 32)
	binary.NativeEndian.PutUint64(b[16:], 40) // the skips word
	writeFile(t, other, b)
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	count()
	if c, err := s.Counts(ctx, "db"); err != nil || c.Skips != 41 {
		t.Errorf("after the file was replaced: %+v, %v; want 40 + 1 skips", c, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	count() // a closed Store maps again
	if c, _ := s.Counts(ctx, "db"); c.Skips != 42 {
		t.Errorf("after Close and a Count: %d skips, want 42", c.Skips)
	}
}
