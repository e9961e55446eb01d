package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/failopen"
	"github.com/fusebox-hq/fusebox/status"
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
	cmd.ValidArgsFunction = completeNames(a, false, true)
	return cmd
}

func runStatus(ctx context.Context, a *app, names []string, asJSON bool) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	store := a.openStore(cfg)
	defer store.Close()
	if err := failopen.Reason(store); err != nil {
		return fmt.Errorf("state store: %w", err)
	}
	for _, n := range names {
		if err := unknownName(ctx, cfg, store, n, ""); err != nil {
			return err
		}
	}
	answers, _ := store.(fusebox.AnswerStore)
	now := a.clock.Now()
	rows, err := status.Snapshot(ctx, store, answers, catalog(cfg), names, now)
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
	return status.WriteTable(a.stdout, rows, now.Wall)
}

// catalog says which names the config defines as endpoints and chains.
func catalog(cfg *config.Config) status.Catalog {
	t := cfg.Targets()
	cat := status.Catalog{Chains: map[string][]string{}}
	for _, ep := range t.Endpoints {
		cat.Endpoints = append(cat.Endpoints, ep.Name)
	}
	for _, ch := range t.Chains {
		cat.Chains[ch.Name] = ch.Endpoints
	}
	return cat
}
