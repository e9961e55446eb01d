package file_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
)

var damaged = []struct {
	name    string
	content []byte
	problem string // in the warning
}{
	{"truncated", []byte(`{"name":"db","state":"open","generation":3,"consec`), "not a valid record"},
	{"zero-filled", make([]byte, 512), "512 zero bytes"},
	{"garbage", []byte("\x89PNG\r\n\x1a\n\x00\x00garbage"), "not a valid record"},
	{"empty", nil, "empty"},
	{"JSON of another shape", []byte(`[1, 2, 3]`), "not a valid record"},
}

func TestDamagedStateFileIsMovedAside(t *testing.T) {
	for _, d := range damaged {
		for _, first := range []string{"Load", "Update"} {
			t.Run(d.name+" seen by "+first, func(t *testing.T) {
				dir := t.TempDir()
				logOpt, log := withLog()
				s := open(t, dir, logOpt, file.WithNow(func() time.Time { return fixedNow }))
				path := filepath.Join(dir, "db.json")
				writeFile(t, path, d.content)

				var st breaker.State
				var err error
				if first == "Load" {
					st, err = s.Load(ctx, "db")
				} else {
					st, err = s.Update(ctx, "db", func(st *breaker.State) ([]breaker.Event, bool) { return nil, false })
				}
				if err != nil || st.Name != "db" || st.Phase != "" || st.Generation != 0 {
					t.Fatalf("%s = %+v, %v; want a fresh state", first, st, err)
				}
				if got := readFile(t, path+corruptSuffix); !bytes.Equal(got, d.content) {
					t.Errorf("moved-aside file holds %q, want the damaged content", got)
				}
				if _, err := os.Lstat(path); !os.IsNotExist(err) {
					t.Errorf("db.json still there (%v)", err)
				}
				if _, err := s.Load(ctx, "db"); err != nil {
					t.Fatal(err)
				}
				if st := mustUpdate(t, s, "db"); st.ConsecutiveFailures != 1 {
					t.Errorf("Update after the damage stored %+v, want 1 success", st)
				}
				if st, err := s.Load(ctx, "db"); err != nil || st.ConsecutiveFailures != 1 {
					t.Errorf("Load = %+v, %v; want 1 success", st, err)
				}
				w := log.warnings()
				if len(w) != 1 {
					t.Fatalf("%d warnings, want 1:\n%s", len(w), strings.Join(w, ""))
				}
				for _, want := range []string{path, d.problem, path + corruptSuffix} {
					if !strings.Contains(w[0], want) {
						t.Errorf("warning %q does not say %q", w[0], want)
					}
				}
			})
		}
	}
}

func TestDamagedEventLogIsMovedAside(t *testing.T) {
	for _, d := range []struct{ name, content, problem string }{
		{"torn last line", `{"time":"2030-01-02T03:04:05Z","circuit":"db","kind":"failure"}` + "\n" + `{"time":"2030-01-02T03:`, "cut short"},
		{"zero-filled", string(make([]byte, 300)), "zero bytes"},
		{"garbage", "\x89PNG\r\n\x1a\x00garbage", "cut short"},
	} {
		t.Run(d.name, func(t *testing.T) {
			dir := t.TempDir()
			logOpt, log := withLog()
			s := open(t, dir, logOpt, file.WithNow(func() time.Time { return fixedNow }))
			path := filepath.Join(dir, "events", "db.jsonl")
			writeFile(t, path, []byte(d.content))

			mustUpdate(t, s, "db")
			mustUpdate(t, s, "db")
			if got := string(readFile(t, path+corruptSuffix)); got != d.content {
				t.Errorf("moved-aside log holds %q, want the damaged content", got)
			}
			evs, err := s.Events(ctx, "db", time.Time{})
			if err != nil || len(evs) != 2 {
				t.Errorf("Events = %d events, %v; want the 2 appended since", len(evs), err)
			}
			w := log.warnings()
			if len(w) != 1 || !strings.Contains(w[0], d.problem) || !strings.Contains(w[0], path+corruptSuffix) {
				t.Errorf("warnings:\n%s\nwant one naming the problem (%s) and where the log went", strings.Join(w, ""), d.problem)
			}
		})
	}
}

func TestUndecodableEventLinesAreSkipped(t *testing.T) {
	dir := t.TempDir()
	logOpt, log := withLog()
	s := open(t, dir, logOpt)
	path := filepath.Join(dir, "events", "db.jsonl")
	writeFile(t, path, []byte(`{"time":"2030-01-02T03:04:05Z","circuit":"db","kind":"failure","reason":"a"}`+"\nnot json\n\n"+
		`{"time":"2030-01-02T03:04:06Z","circuit":"db","kind":"failure","reason":"b"}`+"\n"))
	mustUpdate(t, s, "db")
	evs, err := s.Events(ctx, "db", time.Time{})
	if err != nil || len(evs) != 3 || evs[0].Reason != "a" || evs[1].Reason != "b" {
		t.Errorf("Events = %+v, %v; want a, b and the appended one", evs, err)
	}
	if w := log.warnings(); len(w) != 0 {
		t.Errorf("a log ending in a newline was treated as damaged:\n%s", strings.Join(w, ""))
	}
}

func TestDamagedAnswerIsMovedAside(t *testing.T) {
	dir := t.TempDir()
	logOpt, log := withLog()
	s := open(t, dir, logOpt, file.WithNow(func() time.Time { return fixedNow }))
	path := filepath.Join(dir, "answers", "weather.json")
	writeFile(t, path, []byte(`{"source":"primary","body":"c3Vu`))
	if a, ok, err := s.LoadAnswer(ctx, "weather"); ok || err != nil {
		t.Errorf("LoadAnswer = %+v, ok %v, %v; want none", a, ok, err)
	}
	if _, err := os.Lstat(path + corruptSuffix); err != nil {
		t.Errorf("damaged answer not moved aside: %v", err)
	}
	if w := log.warnings(); len(w) != 1 {
		t.Errorf("%d warnings, want 1", len(w))
	}
}

// TestSymlinksAreNeverFollowed plants, in place of each file the store uses,
// a symlink to a file outside the dir.
func TestSymlinksAreNeverFollowed(t *testing.T) {
	const secret = `{"name":"db","state":"forced_open","generation":99}`
	const (
		movedAside = "moved aside" // with one warning or error; the call succeeds
		replaced   = "replaced"    // by a regular file; the call succeeds
	)
	load := func(s *file.Store) error { _, err := s.Load(ctx, "db"); return err }
	update := func(s *file.Store) error { _, err := s.Update(ctx, "db", succeed); return err }
	loadAnswer := func(s *file.Store) error { _, _, err := s.LoadAnswer(ctx, "weather"); return err }
	saveAnswer := func(s *file.Store) error { return s.SaveAnswer(ctx, "weather", answers.Answer{}) }
	count := func(s *file.Store) error { return s.Count(ctx, "db", fusebox.Counts{Skips: 1}) }
	for _, c := range []struct {
		path string // where the link is planted
		by   string
		use  func(*file.Store) error
		want string
	}{
		{"db.json", "Load", load, movedAside},
		{"db.json", "Update", update, movedAside},
		{"events/db.jsonl", "Update", update, movedAside},
		{"answers/weather.json", "LoadAnswer", loadAnswer, movedAside},
		{"answers/weather.json", "SaveAnswer", saveAnswer, replaced},
		{".counts/db.counts", "Count", count, movedAside},
		{".counts/db.counts", "Counts", func(s *file.Store) error { _, err := s.Counts(ctx, "db"); return err }, movedAside},
		{".locks/db.lock", "Update", update, movedAside},
		{"answers/weather.lock", "Exclusive", func(s *file.Store) error {
			return s.Exclusive(ctx, "weather", func() error { return nil })
		}, movedAside},
	} {
		t.Run(c.path+" met by "+c.by+" is "+c.want, func(t *testing.T) {
			dir := t.TempDir()
			target := filepath.Join(t.TempDir(), "target")
			writeFile(t, target, []byte(secret))
			link := filepath.Join(dir, c.path)
			if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			logOpt, log := withLog()
			s := open(t, dir, logOpt, file.WithNow(func() time.Time { return fixedNow }))

			err := c.use(s)
			if got := string(readFile(t, target)); got != secret {
				t.Errorf("the link's target was changed to %q", got)
			}
			if err != nil {
				t.Errorf("call = %v, want the link %s and the call to succeed", err, c.want)
			}
			if st, err := s.Load(ctx, "db"); err != nil || st.Generation == 99 {
				t.Errorf("Load = %+v, %v: read through the link", st, err)
			}
			fi, err := os.Lstat(link)
			switch {
			case c.want == replaced && (err != nil || !fi.Mode().IsRegular()):
				t.Errorf("the link was not replaced by a file: %v, %v", fi, err)
			case c.want == movedAside:
				if fi, err := os.Lstat(link + corruptSuffix); err != nil || fi.Mode()&os.ModeSymlink == 0 {
					t.Errorf("the link was not moved aside as itself: %v, %v", fi, err)
				}
				if w := log.warnings(); len(w) != 1 || !strings.Contains(w[0], "symlink") {
					t.Errorf("warnings:\n%s\nwant one saying it is a symlink", strings.Join(w, ""))
				}
			}
		})
	}
}

func TestConcurrentReadersOfADamagedFileWarnOnce(t *testing.T) {
	dir := t.TempDir()
	logOpt, log := withLog()
	s := open(t, dir, logOpt)
	writeFile(t, filepath.Join(dir, "db.json"), make([]byte, 100))
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if st, err := s.Load(ctx, "db"); err != nil || st.Name != "db" {
				t.Errorf("Load = %+v, %v", st, err)
			}
		})
	}
	wg.Wait()
	if w := log.warnings(); len(w) != 1 {
		t.Errorf("%d warnings, want 1:\n%s", len(w), strings.Join(w, ""))
	}
}
