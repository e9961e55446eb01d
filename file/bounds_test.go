package file_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
)

// TestOversizedOrIrregularFilesAreRefusedUnread: a FIFO, or a file of a
// gigabyte (sparse: it costs no disk), in place of a state file or a stored
// answer is moved aside for what it is, without being read.
func TestOversizedOrIrregularFilesAreRefusedUnread(t *testing.T) {
	huge := func(t *testing.T, path string) {
		writeFile(t, path, nil)
		if err := os.Truncate(path, 1<<30); err != nil {
			t.Fatal(err)
		}
	}
	fifo := func(t *testing.T, path string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name    string
		rel     string
		make    func(*testing.T, string)
		problem string
	}{
		{"state file of 1 GiB", "db.json", huge, "it holds 1073741824 bytes, more than the 1048576 a record may"},
		{"state file a FIFO", "db.json", fifo, "it is not a regular file"},
		{"answer of 1 GiB", "answers/db.json", huge, "it holds 1073741824 bytes, more than the 67108864 a record may"},
		{"answer a FIFO", "answers/db.json", fifo, "it is not a regular file"},
		{"event log a FIFO", "events/db.jsonl", fifo, "it is not a regular file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			logOpt, log := withLog()
			s := open(t, dir, logOpt, file.WithNow(func() time.Time { return fixedNow }))
			path := filepath.Join(dir, tt.rel)
			tt.make(t, path)
			switch {
			case strings.HasPrefix(tt.rel, "answers/"):
				if _, ok, err := s.LoadAnswer(ctx, "db"); ok || err != nil {
					t.Fatalf("LoadAnswer: ok %v, %v; want none", ok, err)
				}
			case strings.HasPrefix(tt.rel, "events/"):
				mustUpdate(t, s, "db")
				if evs, err := s.Events(ctx, "db", time.Time{}); err != nil || len(evs) != 1 {
					t.Fatalf("Events = %v, %v; want the one appended", evs, err)
				}
			default:
				if st, err := s.Load(ctx, "db"); err != nil || st.Generation != 0 {
					t.Fatalf("Load = %+v, %v; want a fresh state", st, err)
				}
			}
			if _, err := os.Lstat(path + corruptSuffix); err != nil {
				t.Errorf("not moved aside: %v", err)
			}
			if w := log.warnings(); len(w) != 1 || !strings.Contains(w[0], tt.problem) {
				t.Errorf("warnings:\n%s\nwant one saying %q", strings.Join(w, ""), tt.problem)
			}
		})
	}
}

// TestEventLogIsReadWithinBounds: of a log longer than the Store reads only
// the newest part is decoded, and an over-long line is skipped undecoded.
func TestEventLogIsReadWithinBounds(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	path := filepath.Join(dir, "events", "db.jsonl")
	old := `{"time":"2030-01-02T03:04:05Z","circuit":"db","kind":"failure","reason":"old"}` + "\n"
	long := `{"time":"2030-01-02T03:04:06Z","circuit":"db","kind":"failure","reason":"` + strings.Repeat("x", 1<<20) + `"}` + "\n"
	newest := `{"time":"2030-01-02T03:04:07Z","circuit":"db","kind":"failure","reason":"new"}` + "\n"
	filler := strings.Repeat(`{"time":"2030-01-02T03:04:06Z","circuit":"db","kind":"x"}`+"\n", (20<<20)/58)
	writeFile(t, path, []byte(old+filler+long+newest))
	evs, err := s.Events(ctx, "db", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Reason == "old" || len(e.Reason) > 100 {
			t.Fatalf("decoded %q: beyond the newest part read, or an over-long line", e.Reason[:min(len(e.Reason), 20)])
		}
	}
	if last := evs[len(evs)-1]; last.Reason != "new" {
		t.Errorf("the newest event is %+v, want reason new", last)
	}
}

// A circuit's event log is bounded by size: one that passes 4 MiB (a
// topic flapping for days, say) is cut to its newest 2 MiB of whole lines
// as the next events are appended, the newest kept, with one warning.
func TestEventLogIsCutBySize(t *testing.T) {
	dir := t.TempDir()
	opt, logs := withLog()
	s := open(t, dir, opt)
	path := filepath.Join(dir, "events", "db.jsonl")
	old := `{"time":"2030-01-02T03:04:05Z","circuit":"db","kind":"failure","reason":"old"}` + "\n"
	line := `{"time":"2030-01-02T03:04:06Z","circuit":"db","kind":"failure","reason":"flap"}` + "\n"
	writeFile(t, path, []byte(old+strings.Repeat(line, (4<<20)/len(line))))
	for i := range 3 {
		_, err := s.Update(ctx, "db", func(st *breaker.State) ([]breaker.Event, bool) {
			return []breaker.Event{{Time: time.Date(2030, 1, 3, 0, 0, i, 0, time.UTC), Circuit: "db", Kind: breaker.EventFailure, Reason: fmt.Sprint("new ", i)}}, true
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 2<<20+1024 || fi.Size() < 2<<20-1024 {
		t.Errorf("the log holds %d bytes after passing 4 MiB, want about 2 MiB", fi.Size())
	}
	evs, err := s.Events(ctx, "db", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].Reason != "flap" {
		t.Errorf("the oldest event kept is %+v, want a whole flap line (the oldest ones dropped)", evs[0])
	}
	if got := evs[len(evs)-1].Reason; got != "new 2" {
		t.Errorf("the newest event is %q, want new 2", got)
	}
	if w := logs.warnings(); len(w) != 1 || !strings.Contains(w[0], "oldest events are dropped") {
		t.Errorf("warnings %q, want one saying the log was cut", w)
	}
}
