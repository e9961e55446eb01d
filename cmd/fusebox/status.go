package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/config"
)

func newStatusCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [--json] [NAME...]",
		Short: "Show every circuit's state, failures and last results",
		Long: `Show the circuits in the state dir (and the endpoints and chains in the
config): state, consecutive failures, when it opened and when it may be probed
again, the last failure with its reason, and the last success.

A circuit whose open period has ended shows as half_open (ready to probe) even
when no call has come since. --json prints an array of objects with the fields
name, kind, state (closed | open | half_open | forced_open),
consecutive_failures, opened_at, open_until, last_failure_at, last_failure,
last_success_at, total_failures, total_successes and skipped; times are RFC
3339 and absent when unknown. Chains add endpoints, last_source and
answer_stored_at.`,
		Args: func(cmd *cobra.Command, args []string) error {
			for _, n := range args {
				if err := fusebox.ValidateName(n); err != nil {
					return &usageError{msg: err.Error()}
				}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStatus(cmd.Context(), a, args, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// statusRow is one line of status; its JSON form is a documented interface.
type statusRow struct {
	Name                string     `json:"name"`
	Kind                string     `json:"kind"` // circuit | endpoint | chain
	State               string     `json:"state"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	OpenedAt            *time.Time `json:"opened_at,omitempty"`
	OpenUntil           *time.Time `json:"open_until,omitempty"`
	LastFailureAt       *time.Time `json:"last_failure_at,omitempty"`
	LastFailure         string     `json:"last_failure,omitempty"`
	LastSuccessAt       *time.Time `json:"last_success_at,omitempty"`
	TotalFailures       uint64     `json:"total_failures"`
	TotalSuccesses      uint64     `json:"total_successes"`
	Skipped             uint64     `json:"skipped"`
	Endpoints           []string   `json:"endpoints,omitempty"`
	LastSource          string     `json:"last_source,omitempty"`
	AnswerStoredAt      *time.Time `json:"answer_stored_at,omitempty"`

	reopensIn time.Duration
}

func runStatus(ctx context.Context, a *app, names []string, asJSON bool) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	store := a.openStore(cfg)
	defer store.Close()
	if u, ok := store.(unavailable); ok {
		return fmt.Errorf("state store: %w", u.err)
	}
	rows, err := statusRows(ctx, store, cfg, names, a.clock.Now())
	if err != nil {
		return err
	}
	for i := range rows {
		rows[i].LastFailure = a.redactor.String(rows[i].LastFailure)
	}
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	return printStatus(a.stdout, rows, a.clock.Now().Wall)
}

func statusRows(ctx context.Context, store fusebox.Store, cfg *config.Config, names []string, now fusebox.Instant) ([]statusRow, error) {
	chains := map[string][]string{}
	if len(names) == 0 {
		stored, err := store.Names(ctx)
		if err != nil {
			return nil, fmt.Errorf("list circuits: %w", err)
		}
		names = stored
		if cfg != nil {
			for n, c := range cfg.Circuits {
				if c.Endpoint != nil {
					names = append(names, n)
				}
			}
			for n := range cfg.Chains {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		names = slices.Compact(names)
	}
	if cfg != nil {
		for n, c := range cfg.Chains {
			chains[n] = c.Endpoints
		}
	}
	rows := make([]statusRow, 0, len(names))
	for _, name := range names {
		if eps, ok := chains[name]; ok {
			row := statusRow{Name: name, Kind: "chain", State: "chain", Endpoints: eps}
			if ans, ok, err := store.LoadAnswer(ctx, name); err == nil && ok {
				row.LastSource = ans.Source
				row.AnswerStoredAt = timePtr(ans.StoredAt)
			}
			rows = append(rows, row)
			continue
		}
		st, err := store.Load(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", name, err)
		}
		skips, _ := store.Skips(ctx, name)
		rows = append(rows, circuitRow(st, now, skips, cfg))
	}
	return rows, nil
}

func circuitRow(st fusebox.State, now fusebox.Instant, skips uint64, cfg *config.Config) statusRow {
	v := st.View(now)
	row := statusRow{
		Name: st.Name, Kind: "circuit", State: string(v.Phase),
		ConsecutiveFailures: st.ConsecutiveFailures,
		LastFailureAt:       timePtr(st.LastFailureAt),
		LastFailure:         st.LastFailure,
		LastSuccessAt:       timePtr(st.LastSuccessAt),
		TotalFailures:       st.TotalFailures,
		TotalSuccesses:      st.TotalSuccesses,
		Skipped:             skips,
		reopensIn:           v.ReopensIn,
	}
	if cfg != nil {
		if c, ok := cfg.Circuits[st.Name]; ok && c.Endpoint != nil {
			row.Kind = "endpoint"
		}
	}
	if v.Phase != fusebox.Closed {
		row.OpenedAt = timePtr(st.OpenedAt.Wall)
		row.OpenUntil = timePtr(v.OpenUntil)
	}
	return row
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC().Truncate(time.Second)
	return &t
}

func printStatus(w io.Writer, rows []statusRow, now time.Time) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no circuits yet: they appear after their first failure or success")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tFAILS\tOPENED\tREOPENS IN\tLAST FAILURE\tLAST SUCCESS\tSKIPPED")
	for _, r := range rows {
		if r.Kind == "chain" {
			answered := "-"
			if r.LastSource != "" {
				answered = fmt.Sprintf("last answer from %s, stored %s", r.LastSource, ago(now, r.AnswerStoredAt))
			}
			fmt.Fprintf(tw, "%s\tchain\t-\t-\t-\t%s\t-\t-\n", r.Name, answered)
			continue
		}
		reopens := "-"
		switch r.State {
		case string(fusebox.HalfOpen):
			reopens = "ready to probe"
		case string(fusebox.Open), string(fusebox.ForcedOpen):
			if r.reopensIn > 0 {
				reopens = r.reopensIn.Round(time.Second).String()
			} else {
				reopens = "on reset"
			}
		}
		failure := "-"
		if r.LastFailureAt != nil {
			failure = fmt.Sprintf("%s (%s)", ago(now, r.LastFailureAt), truncate(r.LastFailure, 60))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.State, r.ConsecutiveFailures,
			ago(now, r.OpenedAt), reopens, failure, ago(now, r.LastSuccessAt), strconv.FormatUint(r.Skipped, 10))
	}
	return tw.Flush()
}

// ago says how long before now t was, the way a person reads it.
func ago(now time.Time, t *time.Time) string {
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
