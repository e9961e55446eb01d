package history

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fusebox-hq/fusebox/internal/human"
)

// WriteTable writes outages as a table, one row each, in the order given,
// times in loc. BACK is when the endpoint came back: between the last
// failure and the first success (or "ongoing"); DURATION is the range that
// gives, from the shortest the outage can have lasted to the longest.
func WriteTable(w io.Writer, outages []Outage, loc *time.Location) error {
	bw := bufio.NewWriter(w) // tabwriter writes cell by cell: one write in all
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CIRCUIT\tSTART\tBACK\tDURATION\tFAILURES\tSKIPS\tSAVED\tREASONS")
	for _, o := range outages {
		back := "ongoing"
		if !o.Ongoing {
			back = between(clock(o.LastFailureAt, o.Start, loc), clock(o.End, o.LastFailureAt, loc))
			if o.EndedBy != "" && o.EndedBy != "probe succeeded" {
				back += " (" + o.EndedBy + ")"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", o.Circuit, o.Start.In(loc).Format("2006-01-02 15:04:05"), back,
			between(human.Round(o.DownAtLeast()).String(), human.Round(o.Duration).String()), o.Failures, o.Skips, human.Round(o.Saved), reasons(o.Reasons))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return bw.Flush()
}

// between writes a range, or one value when both ends read the same.
func between(from, to string) string {
	if from == to {
		return from
	}
	return from + "–" + to
}

// clock writes t as a time of day, with its date when it is not since's.
func clock(t, since time.Time, loc *time.Location) string {
	t, since = t.In(loc), since.In(loc)
	if t.YearDay() == since.YearDay() && t.Year() == since.Year() {
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
