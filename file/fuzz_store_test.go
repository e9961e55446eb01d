package file_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
)

var stateSeeds = []string{
	`{"name":"db","state":"closed","generation":0,"consecutive_failures":0,"total_failures":0,"total_successes":3}` + "\n",
	`{"name":"db","state":"open","generation":3,"consecutive_failures":3,"opened_at":{"wall":"2030-01-02T03:04:05Z","boot":"b","boottime_ns":5},"open_period":"30s","probes":[{"id":"x","granted":{"wall":"2030-01-02T03:04:40Z"},"for":"12s"}]}`,
	`{"name":"db","state":"open","generation":3,"consec`,
	"\x00\x00\x00\x00\x00\x00\x00\x00",
	"\x89PNG\r\n\x1a\n\x00\x00garbage",
	"",
	"[1, 2, 3]",
	"null",
	`{"name":"other","state":"forced_open"}`,
	`{"state":"closed"}{"state":"open"}`,
	`{"total_successes":18446744073709551615}`,
}

// FuzzStateFile puts arbitrary bytes where a circuit's state file goes and
// uses the store: Load never fails, a file that decodes is used as it is and
// kept, any other is moved aside byte for byte with one warning, and the
// next Update writes a state file that decodes to what was stored.
func FuzzStateFile(f *testing.F) {
	for _, s := range stateSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "db.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		logOpt, log := withLog()
		s := open(t, dir, logOpt, file.WithFsync(false), file.WithNow(func() time.Time { return fixedNow }))
		st, err := s.Load(ctx, "db")
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		var want breaker.State
		decodes := json.Unmarshal(data, &want) == nil
		if st.Name != "db" {
			t.Errorf("Load gave a state named %q", st.Name)
		}
		if decodes {
			if got, _ := os.ReadFile(path); !bytes.Equal(got, data) || len(log.warnings()) != 0 {
				t.Fatalf("a decodable state file was changed or warned about:\n%s", strings.Join(log.warnings(), ""))
			}
		} else {
			if got, err := os.ReadFile(path + corruptSuffix); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("damaged file not moved aside as it was: %q, %v", got, err)
			}
			if st.Generation != 0 || st.Phase != "" || st.ConsecutiveFailures != 0 {
				t.Fatalf("Load of a damaged file = %+v, want a fresh state", st)
			}
			if w := log.warnings(); len(w) != 1 {
				t.Fatalf("%d warnings, want 1:\n%s", len(w), strings.Join(w, ""))
			}
		}
		stored, err := s.Update(ctx, "db", func(st *breaker.State) ([]breaker.Event, bool) {
			st.LastFailure = "fuzz marker"
			return nil, true
		})
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var back breaker.State
		if err := json.Unmarshal(b, &back); err != nil || back.LastFailure != "fuzz marker" || back.Generation != stored.Generation {
			t.Fatalf("stored file %q does not decode to what Update stored: %v", b, err)
		}
	})
}

var logSeeds = []string{
	`{"time":"2030-01-02T03:04:05Z","circuit":"db","kind":"failure","attempt":1,"reason":"exit status 1"}` + "\n",
	`{"time":"2030-01-02T03:04:05Z","circuit":"db","kind":"failure"}` + "\n" + `{"time":"2030-01-02T03:`,
	"\x00\x00\x00\x00",
	"\x89PNG\r\n\x1a\x00garbage",
	"not json\n\n\n",
	"",
	"\n",
	`{"time":"not a time"}` + "\n",
}

// FuzzEventLog puts arbitrary bytes where a circuit's event log goes and
// appends to it: the append never fails and lands whole, a log that ends in
// a newline (or is empty) is kept in front of it, any other is moved aside
// byte for byte with one warning, and Events reads the log back without
// error, the appended event last.
func FuzzEventLog(f *testing.F) {
	for _, s := range logSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "events", "db.jsonl")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		// The automatic GC, due on a fresh dir, would trim the log: not now.
		mark := filepath.Join(dir, ".gc")
		if err := os.WriteFile(mark, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(mark, fixedNow, fixedNow); err != nil {
			t.Fatal(err)
		}
		logOpt, log := withLog()
		s := open(t, dir, logOpt, file.WithFsync(false), file.WithNow(func() time.Time { return fixedNow }))
		marker := breaker.Event{Time: fixedNow.UTC(), Circuit: "db", Kind: breaker.EventFailure, Attempt: 1, Reason: "fuzz marker"}
		if _, err := s.Update(ctx, "db", func(st *breaker.State) ([]breaker.Event, bool) {
			return []breaker.Event{marker}, true
		}); err != nil {
			t.Fatalf("Update: %v", err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		torn := len(data) > 0 && data[len(data)-1] != '\n'
		if torn {
			if got, err := os.ReadFile(path + corruptSuffix); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("torn log not moved aside as it was: %q, %v", got, err)
			}
			if w := log.warnings(); len(w) != 1 {
				t.Fatalf("%d warnings, want 1:\n%s", len(w), strings.Join(w, ""))
			}
		} else {
			if !bytes.HasPrefix(b, data) {
				t.Fatalf("log %q does not start with what was there, %q", b, data)
			}
			if w := log.warnings(); len(w) != 0 {
				t.Fatalf("warnings about a log that ends well:\n%s", strings.Join(w, ""))
			}
			b = b[len(data):]
		}
		var appended breaker.Event
		if err := json.Unmarshal(b, &appended); err != nil || appended.Reason != "fuzz marker" || b[len(b)-1] != '\n' {
			t.Fatalf("appended %q: %v; want one whole event line", b, err)
		}
		events, err := s.Events(ctx, "db", time.Time{})
		if err != nil || len(events) == 0 || events[len(events)-1].Reason != "fuzz marker" {
			t.Fatalf("Events = %d events, %v; want the appended one last", len(events), err)
		}
	})
}
