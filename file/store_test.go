package file_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/storetest"
)

func TestStore(t *testing.T) {
	// The suite is about what is stored, not how fast: on a loaded machine,
	// 100 updates queued on one lock, each with its fsyncs, may take longer
	// than the default lock timeout.
	storetest.Run(t, func(t *testing.T) fusebox.Admin { return open(t, t.TempDir(), file.WithLockTimeout(time.Minute)) })
}

var ctx = context.Background()

// open opens the Store in dir, failing the test when it cannot.
func open(t testing.TB, dir string, opts ...file.Option) *file.Store {
	t.Helper()
	s, err := file.Open(dir, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() }) // it holds state files open and counters mapped
	return s
}

// logBuffer collects a Store's log, one line a record.
type logBuffer struct{ testenv.Buffer }

// warnings returns the lines logged at warning or error level: a damaged
// file moved aside warns, one fusebox cannot use is an error.
func (l *logBuffer) warnings() []string {
	return append(l.Lines("level=WARN"), l.Lines("level=ERROR")...)
}

func withLog() (file.Option, *logBuffer) {
	l := &logBuffer{}
	return file.WithLogger(slog.New(slog.NewTextHandler(l, nil))), l
}

// fixedNow is the clock of tests that name damaged files. It is the real time
// because it also dates the automatic GC.
var (
	fixedNow      = time.Now()
	corruptSuffix = ".corrupt-" + fixedNow.UTC().Format("20060102T150405Z")
)

func succeed(st *breaker.State) ([]breaker.Event, bool) {
	st.ConsecutiveFailures++
	return []breaker.Event{{Time: time.Now(), Circuit: st.Name, Kind: breaker.EventTransition, Reason: "test"}}, true
}

func mustUpdate(t testing.TB, s *file.Store, name string) breaker.State {
	t.Helper()
	st, err := s.Update(ctx, name, succeed)
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	return st
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ls lists dir's entries, recursively, as paths relative to dir.
func ls(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, _ os.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}
