package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/metrics"
	"github.com/fusebox-hq/fusebox/statestore"
	"github.com/fusebox-hq/fusebox/status"
)

func newStatusCmd(a *app) *cobra.Command {
	var o statusOpts
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [--json | --format table|json|prometheus] [--output FILE] [NAME...]",
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
answer_stored_at. A circuit the state store cannot read has a problem saying
why, and state unknown when its state is what could not be read: every other
circuit is shown, and status then exits 1.

--format prometheus writes the Prometheus text format, for node_exporter's
textfile collector: the state store's families that 'fusebox serve' serves
on /metrics too, with the same names and types: fusebox_state_store_up,
fusebox_circuitbreaker_state{name,state} (1 for the circuit's state, 0 for
the others), fusebox_attempts_total, fusebox_successes_total,
fusebox_failures_total, fusebox_skips_total, fusebox_consecutive_failures,
fusebox_last_success_timestamp_seconds,
fusebox_last_failure_timestamp_seconds and
fusebox_circuitbreaker_open_until_timestamp_seconds, labelled name
(fusebox_calls_total, the first name of fusebox_attempts_total, is kept).
--output FILE replaces FILE atomically (a reader never sees half of it).`,
		Example: `  fusebox status --format prometheus --output /var/lib/prometheus/node-exporter/fusebox.prom`,
		Args: func(cmd *cobra.Command, args []string) error {
			for _, n := range args {
				if err := fusebox.ValidateName(n); err != nil {
					return &usageError{msg: err.Error()}
				}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case asJSON && cmd.Flags().Changed("format") && o.format != "json":
				return usageErrorf("--json and --format %s disagree", o.format)
			case asJSON:
				o.format = "json"
			}
			if !slices.Contains([]string{"table", "json", "prometheus"}, o.format) {
				return usageErrorf("--format: want table, json or prometheus, got %q", o.format)
			}
			o.names = args
			return runStatus(cmd.Context(), a, o)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (--format json)")
	cmd.Flags().StringVar(&o.format, "format", "table", "`FORMAT`: table, json or prometheus")
	cmd.Flags().StringVar(&o.output, "output", "", "write to `FILE`, replaced atomically, instead of stdout")
	cmd.ValidArgsFunction = completeNames(a, false, true)
	return cmd
}

type statusOpts struct {
	names          []string
	format, output string
}

func runStatus(ctx context.Context, a *app, o statusOpts) error {
	names := o.names
	cfg, store, err := a.readState("")
	if err != nil {
		return err
	}
	defer store.Close()
	for _, n := range names {
		if err := unknownName(ctx, cfg, store, n, ""); err != nil {
			return err
		}
	}
	answers, _ := store.(answers.Store)
	now := a.clock.Now()
	rows, err := status.Snapshot(ctx, store, answers, catalog(cfg), names, now)
	if err != nil {
		return err
	}
	for i := range rows {
		rows[i].LastFailure = a.redactor.String(rows[i].LastFailure)
	}
	write := func(w io.Writer) error {
		switch o.format {
		case "json":
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(rows)
		case "prometheus":
			return metrics.Write(w, metrics.Circuits(rows, statestore.Down(store) == nil))
		}
		return status.WriteTable(w, rows, now.Wall)
	}
	if o.output != "" {
		err = writeFileAtomically(o.output, write)
	} else {
		err = write(a.stdout)
	}
	if err != nil {
		return err
	}
	return unreadRows(rows)
}

// unreadRows is the error of the rows the store could not give whole, or
// nil when there are none.
func unreadRows(rows []status.Row) error {
	var problems []string
	for _, r := range rows {
		if r.Problem != "" {
			problems = append(problems, r.Problem)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("state store: %d of %d circuits shown without their state or counts: %s", len(problems), len(rows), strings.Join(problems, "; "))
}

// writeFileAtomically writes path through a temporary file beside it,
// synced and renamed over it, readable by all (a collector runs as another
// user): a reader sees the old file or the new one, never a part.
func writeFileAtomically(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	err = write(f)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// catalog says which names the config defines as endpoints and chains.
func catalog(cfg *config.Config) status.Catalog {
	endpoints, chains := cfg.Callables()
	cat := status.Catalog{Chains: map[string][]string{}}
	for _, ep := range endpoints {
		cat.Endpoints = append(cat.Endpoints, ep.Name)
	}
	for _, ch := range chains {
		cat.Chains[ch.Name] = ch.Endpoints
	}
	return cat
}
