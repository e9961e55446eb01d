package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/config"
)

// knownNames returns the circuits and chains the config defines and the
// store holds, sorted, each once. ok is false when the store cannot list
// its circuits: then no name can be said to be unknown.
func knownNames(ctx context.Context, cfg *config.Config, store fusebox.Store) (names []string, ok bool) {
	stored, err := store.Names(ctx)
	if err != nil {
		return nil, false
	}
	names = append(names, stored...)
	if cfg != nil {
		for n := range cfg.Circuits {
			names = append(names, n)
		}
		for n := range cfg.Chains {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), true
}

// unknownName is the error for a name neither configured nor stored: most
// likely a typo, which would otherwise steer (or show) a circuit nobody
// uses. hint says how to go on when the name is meant.
func unknownName(ctx context.Context, cfg *config.Config, store fusebox.Store, name, hint string) error {
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
