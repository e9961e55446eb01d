package history_test

import (
	"bytes"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fusebox-hq/fusebox/history"
)

// A bridge that crashes every morning at 6:15 for 20 minutes, over a month
// of calls once a minute, beside a router that never fails.
func TestPatternOfABridgeThatFailsEveryMorning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t)
		bridge := s.upstream("bridge")
		s.upstream("router")
		start := time.Now() // 2000-01-01 00:00 UTC, a Saturday
		for day := range 30 {
			morning := start.AddDate(0, 0, day).Add(6*time.Hour + 15*time.Minute)
			s.run(morning.Sub(time.Now()), time.Minute)
			bridge.down = true
			s.run(20*time.Minute, time.Minute)
			bridge.down = false
		}
		s.run(time.Hour, time.Minute)

		out := s.outages()
		if len(out) != 30 {
			t.Fatalf("%d outages, want 30", len(out))
		}
		p := history.PatternOf(out, time.UTC)
		if p.ByHour[6] != 30 {
			t.Errorf("by hour = %v, want all 30 at 06", p.ByHour)
		}
		// 30 days from a Saturday: 5 Saturdays, Sundays; 4 of each other day.
		if want := [7]int{4, 4, 4, 4, 4, 5, 5}; p.ByWeekday != want {
			t.Errorf("by weekday = %v, want %v", p.ByWeekday, want)
		}
		if p.Grid[5][6] != 5 || p.Grid[0][6] != 4 || p.Grid[0][7] != 0 {
			t.Errorf("grid Saturday 06 = %d, Monday 06 = %d, Monday 07 = %d; want 5, 4, 0", p.Grid[5][6], p.Grid[0][6], p.Grid[0][7])
		}

		var b bytes.Buffer
		if err := p.WriteHeatMap(&b); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(b.String(), "\n")
		// Each row: "Mon  " then 24 cells of "x ", then the total.
		wantMon := "Mon  " + strings.Repeat(". ", 6) + "4 " + strings.Repeat(". ", 17) + " 4"
		if lines[2] != wantMon {
			t.Errorf("Monday's row = %q, want %q\n%s", lines[2], wantMon, b.String())
		}
		if !strings.Contains(b.String(), "most start between 06:00 and 07:00 (30 of 30)") {
			t.Errorf("heat map names no peak:\n%s", b.String())
		}
		// In another zone the same starts fall at another hour.
		if p := history.PatternOf(out, time.FixedZone("UTC+2", 2*3600)); p.ByHour[8] != 30 {
			t.Errorf("by hour in UTC+2 = %v, want all at 08", p.ByHour)
		}
	})
}
