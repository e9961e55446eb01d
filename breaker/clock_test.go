package breaker_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

var (
	noon  = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	epoch = time.Unix(0, 0).UTC() // where a machine without an RTC battery boots
)

func TestInstantSince(t *testing.T) {
	earlier := breaker.Instant{Wall: noon, Boot: "boot-a", BootTime: time.Hour}
	tests := []struct {
		name     string
		now      breaker.Instant
		earlier  breaker.Instant
		want     time.Duration
		wantSure bool
	}{
		{"same boot: measured on the boot clock", breaker.Instant{Wall: noon.Add(5 * time.Second), Boot: "boot-a", BootTime: time.Hour + 5*time.Second}, earlier, 5 * time.Second, true},
		{"same boot, wall clock jumped forward an hour: the jump is ignored", breaker.Instant{Wall: noon.Add(time.Hour + 5*time.Second), Boot: "boot-a", BootTime: time.Hour + 5*time.Second}, earlier, 5 * time.Second, true},
		{"same boot, wall clock jumped back an hour: the jump is ignored", breaker.Instant{Wall: noon.Add(-time.Hour + 5*time.Second), Boot: "boot-a", BootTime: time.Hour + 5*time.Second}, earlier, 5 * time.Second, true},
		{"another boot: measured on the wall clock, not sure", breaker.Instant{Wall: noon.Add(time.Minute), Boot: "boot-b", BootTime: 10 * time.Second}, earlier, time.Minute, false},
		{"another boot with the wall clock at 1970: zero, not negative", breaker.Instant{Wall: epoch.Add(30 * time.Second), Boot: "boot-b", BootTime: 30 * time.Second}, earlier, 0, false},
		{"wall-only clocks: measured on the wall clock", breaker.Instant{Wall: noon.Add(time.Minute)}, breaker.Instant{Wall: noon}, time.Minute, true},
		{"wall-only clock gone backwards: zero, not sure", breaker.Instant{Wall: noon.Add(-time.Minute)}, breaker.Instant{Wall: noon}, 0, false},
		{"a wall-only clock reading a boot-clock instant: not sure", breaker.Instant{Wall: noon.Add(time.Minute)}, earlier, time.Minute, false},
		{"a boot clock reading a wall-only instant: not sure", breaker.Instant{Wall: noon.Add(time.Minute), Boot: "boot-a", BootTime: 2 * time.Hour}, breaker.Instant{Wall: noon}, time.Minute, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, sure := tt.now.Since(tt.earlier)
			if got != tt.want || sure != tt.wantSure {
				t.Errorf("Since = %s, %v; want %s, %v", got, sure, tt.want, tt.wantSure)
			}
		})
	}
}

// An instant moved on (testenv.After, as a test clock advances) moves on
// every clock it carries, and Since measures the move on the boot clock.
func TestAnInstantMovesOnEveryClock(t *testing.T) {
	i := breaker.Instant{Wall: noon, Boot: "boot-a", BootTime: time.Hour}
	got := testenv.After(i, time.Minute)
	want := breaker.Instant{Wall: noon.Add(time.Minute), Boot: "boot-a", BootTime: time.Hour + time.Minute}
	if got != want {
		t.Errorf("After = %+v, want %+v", got, want)
	}
	if d, sure := got.Since(i); d != time.Minute || !sure {
		t.Errorf("Since after After = %s, %v", d, sure)
	}
	wallOnly := testenv.After(breaker.Instant{Wall: noon}, time.Minute)
	if wallOnly.BootTime != 0 || !wallOnly.Wall.Equal(noon.Add(time.Minute)) {
		t.Errorf("wall-only After = %+v: a clock it does not carry was moved", wallOnly)
	}
	// A never-set instant is left out of a stored state; a set one is kept.
	if b, err := json.Marshal(breaker.State{Name: "x", FirstOpenedAt: i}); err != nil || bytes.Contains(b, []byte(`"opened_at"`)) || !bytes.Contains(b, []byte(`"first_opened_at"`)) {
		t.Errorf("a state with only first_opened_at set = %s, %v", b, err)
	}
}

func TestDurationJSON(t *testing.T) {
	b, err := json.Marshal(breaker.Duration(90 * time.Second))
	if err != nil || string(b) != `"1m30s"` {
		t.Errorf("Marshal = %s, %v; want \"1m30s\"", b, err)
	}
	for in, want := range map[string]time.Duration{`"1m30s"`: 90 * time.Second, `1500000000`: 1500 * time.Millisecond, `"0s"`: 0} {
		var d breaker.Duration
		if err := json.Unmarshal([]byte(in), &d); err != nil || time.Duration(d) != want {
			t.Errorf("Unmarshal(%s) = %s, %v; want %s", in, time.Duration(d), err, want)
		}
	}
	for _, in := range []string{`"soon"`, `true`, `1.5`} {
		var d breaker.Duration
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("Unmarshal(%s) = %s, want an error", in, time.Duration(d))
		}
	}
}

func TestStateSurvivesJSON(t *testing.T) {
	st := breaker.State{
		Name: "api", Phase: breaker.Open, Generation: 4, ConsecutiveFailures: 3,
		OpenedAt:   breaker.Instant{Wall: noon, Boot: "boot-a", BootTime: time.Hour},
		OpenPeriod: breaker.Duration(30 * time.Second), OpenUntil: noon.Add(30 * time.Second),
		Probes:      []breaker.Lease{{ID: "x", Granted: breaker.Instant{Wall: noon, Boot: "boot-a", BootTime: time.Hour}, For: breaker.Duration(12 * time.Second)}},
		LastFailure: "refused",
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back breaker.State
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	now := testenv.After(st.OpenedAt, 10*time.Second)
	if got, want := back.View(now), st.View(now); got != want {
		t.Errorf("after a JSON round trip View = %+v, want %+v\n%s", got, want, b)
	}
}
