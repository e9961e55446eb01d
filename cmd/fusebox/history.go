package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/history"
	"github.com/fusebox-hq/fusebox/internal/human"
)

type historyOpts struct {
	names   []string
	since   time.Duration
	asJSON  bool
	pattern bool
}

func newHistoryCmd(a *app) *cobra.Command {
	o := historyOpts{since: 7 * 24 * time.Hour}
	cmd := &cobra.Command{
		Use:   "history [NAME...] [--since 7d] [--json] [--pattern]",
		Short: "List outages: when each endpoint was down, for how long and why",
		Long: `List the outages of every circuit (or of those named), newest first: one
row per outage, from the first failure that led to the circuit opening to the
first success after it (or "ongoing"); the endpoint came back between the last
failure and that success, so BACK and DURATION are ranges. Then the failure
reasons seen (counted), the calls skipped meanwhile, and the time those skips
saved callers (estimated from the retry policy the runs that opened the circuit
used: the timeouts and backoff waits they did not sit through). --since keeps
the outages ongoing within that time (default 7d). Events are read in the
order they were stored; a time before 2000, over a day ahead or stepped back by
more than a minute is not believed, and a warning says so.

--pattern shows when outages start instead, as a grid of weekday by hour of
day in local time ('.' none, a digit the count, '+' ten or more); --json
prints the numbers.`,
		Example: `  fusebox history
  fusebox history zigbee2mqtt --since 30d --json
  fusebox history --pattern zigbee2mqtt`,
		Args: func(cmd *cobra.Command, args []string) error {
			for _, n := range args {
				if err := fusebox.ValidateName(n); err != nil {
					return &usageError{msg: err.Error()}
				}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.names = args
			return runHistory(cmd.Context(), a, o)
		},
	}
	cmd.Flags().Var(durationValue{&o.since}, "since", "outages ongoing within `DURATION` (7d, 12h, ...)")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&o.pattern, "pattern", false, "when outages start, by weekday and hour")
	return cmd
}

func runHistory(ctx context.Context, a *app, o historyOpts) error {
	cfg, store, err := a.readState("")
	if err != nil {
		return err
	}
	defer store.Close()
	// Every stored event of the circuits asked for (of all, without
	// names): an outage may have begun before --since.
	var events []breaker.Event
	if len(o.names) == 0 {
		events, err = store.AllEvents(ctx, time.Time{})
	} else {
		for _, name := range o.names {
			var evs []breaker.Event
			if evs, err = store.Events(ctx, name, time.Time{}); err != nil {
				break
			}
			events = append(events, evs...)
		}
	}
	if err != nil {
		return fmt.Errorf("read events: %w", err)
	}
	now := a.clock.Now().Wall
	all, ignored := history.Outages(events, cfg.Policy, now)
	warnIgnored(a, ignored, o.names)
	outages := history.Since(all, now.Add(-o.since))
	kept := outages[:0]
	for _, out := range outages {
		if len(o.names) > 0 && !slices.Contains(o.names, out.Circuit) {
			continue
		}
		if out.Ongoing {
			if c, err := store.Counts(ctx, out.Circuit); err == nil {
				out.CountSkipsTo(c.Skips)
			}
		}
		for i := range out.Reasons {
			out.Reasons[i].Reason = a.redactor.String(out.Reasons[i].Reason)
		}
		kept = append(kept, out)
	}
	if o.pattern {
		p := history.PatternOf(kept, time.Local)
		if o.asJSON {
			return writeJSON(a, p)
		}
		return p.WriteHeatMap(a.stdout)
	}
	if o.asJSON {
		if kept == nil {
			kept = []history.Outage{}
		}
		return writeJSON(a, kept)
	}
	if len(kept) == 0 {
		_, err := fmt.Fprintf(a.stdout, "no outage in the last %s\n", human.Round(o.since))
		return err
	}
	return history.WriteTable(a.stdout, kept, time.Local)
}

// warnIgnored says, once per circuit (of names, when given), which event
// times history did not believe.
func warnIgnored(a *app, ignored []history.Ignored, names []string) {
	type first struct {
		history.Ignored
		n int
	}
	var order []string
	by := map[string]*first{}
	for _, ig := range ignored {
		c := ig.Event.Circuit
		if len(names) > 0 && !slices.Contains(names, c) {
			continue
		}
		if by[c] == nil {
			order = append(order, c)
			by[c] = &first{Ignored: ig}
		}
		by[c].n++
	}
	for _, c := range order {
		f := by[c]
		at := "dropped: the log has no believable time"
		if !f.At.IsZero() {
			at = f.At.Format(time.RFC3339Nano)
		}
		a.logger.Warn("history: ignored event times that cannot be true", "circuit", c, "events", f.n,
			"first", f.Event.Time.Format(time.RFC3339Nano), "why", f.Why, "counted_at", at)
	}
}

func writeJSON(a *app, v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
