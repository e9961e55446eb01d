package logging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/logging"
	"github.com/fusebox-hq/fusebox/redact"
)

var text = logging.Options{Format: "text"}

func TestJournaldLinesCarryPriorityAndNoTimestamp(t *testing.T) {
	var buf bytes.Buffer
	log := logging.New(&buf, text, redact.New("hunter22"), true)
	log.Warn("attempt failed", "circuit", "x", "reason", "token hunter22 refused")
	log.Log(context.Background(), fusebox.LevelNotice, "circuit closed")
	log.Info("waiting before retry") // below the default level
	log.Error("refused")
	want := "<4>msg=\"attempt failed\" circuit=x reason=\"token REDACTED refused\"\n<5>msg=\"circuit closed\"\n<3>msg=refused\n"
	if buf.String() != want {
		t.Errorf("journald lines:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestJournaldPriorityFollowsTheLevel(t *testing.T) {
	var buf bytes.Buffer
	log := logging.New(&buf, logging.Options{Format: "text", Verbose: true}, nil, true)
	log.Error("e")
	log.Warn("w")
	log.Log(context.Background(), fusebox.LevelNotice, "n")
	log.Info("i")
	log.Debug("d")
	log.With("circuit", "x").Warn("with attrs")
	log.WithGroup("g").Info("with group", "k", 1)
	want := "<3>msg=e\n<4>msg=w\n<5>msg=n\n<6>msg=i\n<7>msg=d\n<4>msg=\"with attrs\" circuit=x\n<6>msg=\"with group\" g.k=1\n"
	if buf.String() != want {
		t.Errorf("journald lines:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestJournaldJSONLinesCarryPriorityAndNoTimestamp(t *testing.T) {
	var buf bytes.Buffer
	logging.New(&buf, logging.Options{Format: "json"}, nil, true).Warn("attempt failed", "circuit", "x")
	if want := "<4>{\"msg\":\"attempt failed\",\"circuit\":\"x\"}\n"; buf.String() != want {
		t.Errorf("journald json line %q, want %q", buf.String(), want)
	}
}

func TestLinesOffTheJournalCarryTimeAndLevel(t *testing.T) {
	var buf bytes.Buffer
	logging.New(&buf, text, nil, false).Warn("attempt failed", "circuit", "x")
	line := buf.String()
	if !strings.HasPrefix(line, "time=") || !strings.Contains(line, " level=WARN msg=\"attempt failed\" circuit=x\n") {
		t.Errorf("text line %q, want time=... level=WARN msg=\"attempt failed\" circuit=x", line)
	}

	buf.Reset()
	logging.New(&buf, logging.Options{Format: "json"}, nil, false).Warn("attempt failed", "circuit", "x")
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("json line %q: %v", buf.String(), err)
	}
	if m["time"] == nil || m["level"] != "WARN" || m["msg"] != "attempt failed" || m["circuit"] != "x" {
		t.Errorf("json line %v, want time, level WARN, msg and circuit", m)
	}
}

func TestQuietAndVerboseChooseTheLevel(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    logging.Options
		want string // the records that get through
	}{
		{"by default notice and up", text, "nwe"},
		{"quiet: errors (fusebox's own trouble) only", logging.Options{Format: "text", Quiet: true}, "e"},
		{"verbose: info and debug too", logging.Options{Format: "text", Verbose: true}, "dinwe"},
		{"quiet wins over verbose", logging.Options{Format: "text", Quiet: true, Verbose: true}, "e"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := logging.New(&buf, tc.o, nil, true)
			log.Debug("d")
			log.Info("i")
			log.Log(context.Background(), fusebox.LevelNotice, "n")
			log.Warn("w")
			log.Error("e")
			got := strings.NewReplacer("<3>msg=", "", "<4>msg=", "", "<5>msg=", "", "<6>msg=", "", "<7>msg=", "", "\n", "").Replace(buf.String())
			if got != tc.want {
				t.Errorf("records logged %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSecretsAreRedactedInEveryFormat(t *testing.T) {
	for _, o := range []logging.Options{{Format: "text"}, {Format: "json"}} {
		for _, journal := range []bool{false, true} {
			var buf bytes.Buffer
			log := logging.New(&buf, o, redact.New("hunter22"), journal)
			log.With("token", "hunter22").Warn("refused hunter22", "reason", "token hunter22 refused")
			if out := buf.String(); strings.Contains(out, "hunter22") || strings.Count(out, "REDACTED") != 3 {
				t.Errorf("%s, journal %v: %q, want the secret REDACTED in message, attrs and With", o.Format, journal, out)
			}
		}
	}
}

func TestANilRedactorLeavesLinesAsTheyAre(t *testing.T) {
	var buf bytes.Buffer
	logging.New(&buf, text, nil, true).Warn("skipped", "circuit", "hunter22")
	if want := "<4>msg=skipped circuit=hunter22\n"; buf.String() != want {
		t.Errorf("line %q, want %q", buf.String(), want)
	}
}

func TestValidateWantsTextOrJSON(t *testing.T) {
	for _, f := range []string{"text", "json"} {
		if err := (logging.Options{Format: f}).Validate(); err != nil {
			t.Errorf("Format %q: %v", f, err)
		}
	}
	for _, f := range []string{"xml", "", "JSON"} {
		err := (logging.Options{Format: f}).Validate()
		if want := `want text or json, got "` + f + `"`; err == nil || err.Error() != want {
			t.Errorf("Format %q: %v, want %s", f, err, want)
		}
	}
}

func TestNoticeIsNamedInTextAndJSON(t *testing.T) {
	for _, o := range []logging.Options{{Format: "text"}, {Format: "json"}} {
		var buf bytes.Buffer
		logging.New(&buf, o, nil, false).Log(context.Background(), fusebox.LevelNotice, "circuit closed")
		if out := buf.String(); !strings.Contains(out, "level=NOTICE") && !strings.Contains(out, `"level":"NOTICE"`) {
			t.Errorf("%s: %q, want level NOTICE", o.Format, out)
		}
	}
}

func TestJSONLinesCarryNumbersAndDurationsInSeconds(t *testing.T) {
	for _, journal := range []bool{false, true} {
		var buf bytes.Buffer
		logging.New(&buf, logging.Options{Format: "json", Verbose: true}, nil, journal).Info("waiting before retry",
			"attempt", 1, "attempts", 2, "wait", 93*time.Millisecond, "reopens_in", 2*time.Minute)
		line := strings.TrimPrefix(buf.String(), "<6>")
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("journal %v: %q: %v", journal, line, err)
		}
		if m["attempt"] != 1.0 || m["attempts"] != 2.0 || m["wait"] != 0.093 || m["reopens_in"] != 120.0 {
			t.Errorf("journal %v: %v, want attempt 1, attempts 2, wait 0.093, reopens_in 120", journal, m)
		}
	}
	var buf bytes.Buffer
	logging.New(&buf, logging.Options{Format: "text", Verbose: true}, nil, true).Info("w", "wait", 93*time.Millisecond)
	if buf.String() != "<6>msg=w wait=93ms\n" {
		t.Errorf("text keeps durations as people read them: %q", buf.String())
	}
}
