package status

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// WriteTable prints rows as the table `fusebox status` shows, with times
// said relative to now.
func WriteTable(w io.Writer, rows []Row, now time.Time) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no circuits yet: they appear after their first failure or success")
		return err
	}
	bw := bufio.NewWriter(w) // tabwriter writes cell by cell: one write in all
	tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tFAILS\tOPENED\tREOPENS IN\tLAST FAILURE\tLAST SUCCESS\tSKIPPED")
	for _, r := range rows {
		if r.Kind == KindChain {
			answered := "-"
			if r.LastSource != "" {
				answered = fmt.Sprintf("last answer from %s, stored %s", r.LastSource, Ago(now, r.AnswerStoredAt))
			}
			fmt.Fprintf(tw, "%s\tchain\t-\t-\t-\t%s\t-\t-\n", r.Name, answered)
			continue
		}
		reopens := "-"
		switch r.State {
		case string(breaker.HalfOpen):
			reopens = "ready to probe"
		case string(breaker.Open), string(breaker.ForcedOpen):
			if r.ReopensIn > 0 {
				reopens = r.ReopensIn.Round(time.Second).String()
			} else {
				reopens = "on reset"
			}
		}
		failure := "-"
		if r.LastFailureAt != nil {
			failure = fmt.Sprintf("%s (%s)", Ago(now, r.LastFailureAt), truncate(r.LastFailure, 60))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.State, r.ConsecutiveFailures,
			Ago(now, r.OpenedAt), reopens, failure, Ago(now, r.LastSuccessAt), strconv.FormatUint(r.Skipped, 10))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return bw.Flush()
}

// Ago says how long before now t was, the way a person reads it: "42s ago",
// "5m ago", "3h07m ago", or the time itself when it is older than two days
// or in the future; "-" when t is unknown.
func Ago(now time.Time, t *time.Time) string {
	if t == nil {
		return "-"
	}
	d := now.Sub(*t)
	switch {
	case d < 0:
		return t.Format(time.RFC3339)
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm ago", int(d.Hours()), int(d.Minutes())%60)
	}
	return t.Format(time.RFC3339)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
