package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/fakeapis"
)

// tick is one `fusebox call` process, as a cron job or a timer runs it.
type tick struct {
	start, end time.Time
	code       int
}

// A real upstream on 127.0.0.1 goes down and comes back while a process
// calls it every tick; history must place the outage where the calls saw
// it: from the first failing call to the first that answered again.
func TestHistoryOfARealOutage(t *testing.T) {
	apis := fakeapis.New("key", "token")
	srv := httptest.NewServer(apis)
	defer srv.Close()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cfg := filepath.Join(dir, "config.yaml")
	os.WriteFile(cfg, []byte(`circuits:
  weather:
    attempts: 1
    trip_after: 2
    open_for: 1s
    open_max: 1s
    http:
      url: `+srv.URL+`/weather
      timeout: 2s
`), 0o600)
	env := []string{"FUSEBOX_CONFIG=" + cfg}
	const every = 100 * time.Millisecond
	var ticks []tick
	call := func() tick {
		tk := tick{start: time.Now()}
		tk.code = fbEnv(t, state, env, "call", "weather").Code
		tk.end = time.Now()
		ticks = append(ticks, tk)
		time.Sleep(every)
		return tk
	}

	for range 3 {
		if tk := call(); tk.code != 0 {
			t.Fatalf("call with the upstream up: exit %d", tk.code)
		}
	}
	down := time.Now()
	apis.Down(fakeapis.Weather)
	firstDown := len(ticks)
	for skips := 0; skips < 3; {
		if call().code == 75 {
			skips++
		}
	}
	up := time.Now()
	apis.Up(fakeapis.Weather)
	firstUp := len(ticks)
	for call().code != 0 {
		if len(ticks) > firstUp+100 {
			t.Fatal("the circuit never closed after the upstream came back")
		}
	}
	lastTick := ticks[len(ticks)-1]
	for range 2 {
		call()
	}

	var failures, skips float64
	for _, tk := range ticks[firstDown : len(ticks)-3] {
		switch tk.code {
		case 69:
			failures++
		case 75:
			skips++
		default:
			t.Fatalf("a call during the outage exited %d", tk.code)
		}
	}

	p := fbEnv(t, state, env, "history", "--json")
	var rows []struct {
		Circuit  string    `json:"circuit"`
		Start    time.Time `json:"start"`
		LastFail time.Time `json:"last_failure_at"`
		End      time.Time `json:"end"`
		Ongoing  bool      `json:"ongoing"`
		Duration float64   `json:"duration_seconds"`
		Failures float64   `json:"failures"`
		Skips    float64   `json:"skips"`
		Reasons  []struct {
			Reason string `json:"reason"`
			Count  int    `json:"count"`
		} `json:"reasons"`
	}
	if err := json.Unmarshal([]byte(p.Stdout), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("history --json: %v: exit %d %s %s", err, p.Code, p.Stdout, p.Stderr)
	}
	o := rows[0]
	// Start: during the first call after the upstream went down, which is
	// within a tick of it going down.
	first := ticks[firstDown]
	if o.Start.Before(first.start) || o.Start.After(first.end) || first.start.Sub(down) > every+first.end.Sub(first.start) {
		t.Errorf("start %s, want within the first call after down (%s..%s; down at %s)", o.Start.Format(time.StampMicro), first.start.Format(time.StampMicro), first.end.Format(time.StampMicro), down.Format(time.StampMicro))
	}
	// End: during the first call that answered again, the probe after the
	// upstream came back, at most an open period and a tick after it.
	if o.Ongoing || o.End.Before(lastTick.start) || o.End.After(lastTick.end) || o.End.Before(up) {
		t.Errorf("end %s (ongoing %v), want within the first answered call %s..%s, after up at %s", o.End.Format(time.StampMicro), o.Ongoing, lastTick.start.Format(time.StampMicro), lastTick.end.Format(time.StampMicro), up.Format(time.StampMicro))
	}
	if lastTick.start.Sub(up) > time.Second+every+lastTick.end.Sub(lastTick.start) {
		t.Errorf("the first answer came %s after the upstream was up, more than the open period and a tick", lastTick.start.Sub(up))
	}
	// The return, between the last failure and the end: the last failure
	// is the last failing call's, before the upstream came back.
	var lastFailing tick
	for _, tk := range ticks[firstDown:firstUp] {
		if tk.code == 69 {
			lastFailing = tk
		}
	}
	if o.LastFail.Before(lastFailing.start) || o.LastFail.After(lastFailing.end) || !o.LastFail.Before(up) {
		t.Errorf("last failure %s, want within the last failing call %s..%s, before up at %s", o.LastFail.Format(time.StampMicro), lastFailing.start.Format(time.StampMicro), lastFailing.end.Format(time.StampMicro), up.Format(time.StampMicro))
	}
	if got, want := o.Duration, o.End.Sub(o.Start).Seconds(); got < want-0.002 || got > want+0.002 {
		t.Errorf("duration %.3fs, want end-start %.3fs", got, want)
	}
	if o.Failures != failures || o.Skips != skips {
		t.Errorf("failures %v, skips %v; the calls saw %v and %v", o.Failures, o.Skips, failures, skips)
	}
	if len(o.Reasons) != 1 || float64(o.Reasons[0].Count) != failures || !strings.Contains(o.Reasons[0].Reason, "503") {
		t.Errorf("reasons = %+v, want %v× a 503", o.Reasons, failures)
	}
}
