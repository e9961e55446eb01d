package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/config"
)

// knownNames returns the circuits and chains the config defines and the
// store holds, sorted, each once. ok is false when the store cannot list
// its circuits: then no name can be said to be unknown.
func knownNames(ctx context.Context, cfg *config.Config, store fusebox.Admin) (names []string, ok bool) {
	stored, err := store.Names(ctx)
	if err != nil {
		return nil, false
	}
	names = append(configuredNames(cfg), stored...)
	slices.Sort(names)
	return slices.Compact(names), true
}

// unknownName is the error for a name neither configured nor stored: most
// likely a typo, which would otherwise steer (or show) a circuit nobody
// uses. hint says how to go on when the name is meant.
func unknownName(ctx context.Context, cfg *config.Config, store fusebox.Admin, name, hint string) error {
	if slices.Contains(configuredNames(cfg), name) || held(ctx, store, name) {
		return nil // known, without listing every circuit of the store
	}
	known, ok := knownNames(ctx, cfg, store)
	if !ok || slices.Contains(known, name) {
		return nil
	}
	msg := fmt.Sprintf("no circuit or chain named %s in the config or the state dir", name)
	if s := config.Nearest(name, known); s != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	}
	if hint != "" {
		msg += "; " + hint
	}
	return &usageError{msg: msg}
}

// held reports whether the store holds something of the circuit name: a
// state that has ever changed, or counts. A circuit it holds nothing of may
// still be listed (a damaged file, say): unknownName then asks Names.
func held(ctx context.Context, store fusebox.Admin, name string) bool {
	if st, err := store.Load(ctx, name); err == nil && (st.Generation > 0 || st.ConsecutiveFailures > 0 || !st.UpdatedAt.IsZero() || !st.LastFailureAt.IsZero()) {
		return true
	}
	c, err := store.Counts(ctx, name)
	return err == nil && c != (fusebox.Counts{})
}

// completeNames completes a NAME argument with the circuits and chains of
// the config and the state dir (callable: only the endpoints and chains
// `call` can call). It completes at most the first argument unless many,
// and never creates the state dir.
func completeNames(a *app, callable, many bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 && !many {
			return nil, cobra.ShellCompDirectiveDefault // run: the command and its arguments
		}
		cfg, _ := a.loadConfig()
		var names []string
		if callable {
			endpoints, chains := cfg.Callables()
			for _, ep := range endpoints {
				names = append(names, ep.Name)
			}
			for _, ch := range chains {
				names = append(names, ch.Name)
			}
			slices.Sort(names)
		} else if _, err := os.Stat(a.stateDir(cfg)); err == nil {
			store := a.openStore(cfg)
			names, _ = knownNames(cmd.Context(), cfg, store)
			store.Close()
		}
		if len(names) == 0 && !callable {
			names = configuredNames(cfg) // no state dir yet, or one that cannot be read
		}
		var out []cobra.Completion
		for _, n := range names {
			if strings.HasPrefix(n, toComplete) && !slices.Contains(args, n) {
				out = append(out, n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// configuredNames returns the circuits and chains the config defines, sorted.
func configuredNames(cfg *config.Config) []string {
	names := cfg.CircuitNames()
	if cfg != nil {
		for n := range cfg.Chains {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}
