package history

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable writes outages as a table, one row each, in the order given,
// times in loc.
func WriteTable(w io.Writer, outages []Outage, loc *time.Location) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CIRCUIT\tSTART\tEND\tDURATION\tFAILURES\tSKIPS\tSAVED\tREASONS")
	for _, o := range outages {
		end := "ongoing"
		if !o.Ongoing {
			end = clock(o.End, o.Start, loc)
			if o.EndedBy != "" && o.EndedBy != "probe succeeded" {
				end += " (" + o.EndedBy + ")"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", o.Circuit, o.Start.In(loc).Format("2006-01-02 15:04:05"), end,
			Round(o.Duration), o.Failures, o.Skips, Round(o.Saved), reasons(o.Reasons))
	}
	return tw.Flush()
}

// clock writes t as a time of day, with its date when it is not start's.
func clock(t, start time.Time, loc *time.Location) string {
	t, start = t.In(loc), start.In(loc)
	if t.YearDay() == start.YearDay() && t.Year() == start.Year() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04:05")
}

func reasons(rs []ReasonCount) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%d× %s", r.Count, r.Reason)
	}
	return strings.Join(parts, "; ")
}

// Round trims a duration to what a person reads at a glance.
func Round(d time.Duration) time.Duration {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
