package history

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Pattern counts when outages start, by day of week and hour of day.
type Pattern struct {
	Outages int `json:"outages"`
	// Grid counts starts by weekday (0 is Monday) and hour (0..23);
	// ByWeekday and ByHour are its sums.
	Grid      [7][24]int `json:"grid"`
	ByWeekday [7]int     `json:"by_weekday"`
	ByHour    [24]int    `json:"by_hour"`
	Location  string     `json:"location"`
}

// Weekdays names Pattern's rows, Monday first.
var Weekdays = [7]string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}

// PatternOf counts the outages' starts in loc.
func PatternOf(outages []Outage, loc *time.Location) Pattern {
	p := Pattern{Outages: len(outages), Location: loc.String()}
	for _, o := range outages {
		t := o.Start.In(loc)
		day := (int(t.Weekday()) + 6) % 7
		p.Grid[day][t.Hour()]++
		p.ByWeekday[day]++
		p.ByHour[t.Hour()]++
	}
	return p
}

// WriteHeatMap writes the pattern as a grid readable without colour: one
// row per weekday, one column per hour, each cell the number of outages that
// started then ('.' for none, '+' for ten or more), with the row's total.
func (p Pattern) WriteHeatMap(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "outages by start (%s), %d in all\n", p.Location, p.Outages)
	b.WriteString("     ")
	for h := range 24 {
		if h%3 == 0 {
			fmt.Fprintf(&b, "%-6s", fmt.Sprintf("%02d", h))
		}
	}
	b.WriteString(" total\n")
	for d, row := range p.Grid {
		fmt.Fprintf(&b, "%s  ", Weekdays[d])
		for _, n := range row {
			b.WriteString(cell(n) + " ")
		}
		fmt.Fprintf(&b, " %d\n", p.ByWeekday[d])
	}
	b.WriteString("all  ")
	for _, n := range p.ByHour {
		b.WriteString(cell(n) + " ")
	}
	b.WriteString("\n")
	if h, n := p.peak(); n > 0 {
		fmt.Fprintf(&b, "most start between %02d:00 and %02d:00 (%d of %d)\n", h, (h+1)%24, n, p.Outages)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func cell(n int) string {
	switch {
	case n == 0:
		return "."
	case n >= 10:
		return "+"
	}
	return fmt.Sprint(n)
}

// peak is the hour most outages start in, and how many do.
func (p Pattern) peak() (hour, n int) {
	for h, c := range p.ByHour {
		if c > n {
			hour, n = h, c
		}
	}
	return hour, n
}
