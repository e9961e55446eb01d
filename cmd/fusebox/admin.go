package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/retention"
	"github.com/fusebox-hq/fusebox/statestore"
)

// nameArg accepts exactly one valid circuit name.
func nameArg(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usageErrorf("%s needs exactly one circuit name, got %d", cmd.Name(), len(args))
	}
	if err := fusebox.ValidateName(args[0]); err != nil {
		return &usageError{msg: err.Error()}
	}
	return nil
}

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) != 0 && cmd.HasSubCommands() {
		return unknownCommand(cmd, args[0])
	}
	if len(args) != 0 {
		return usageErrorf("%s takes no arguments, got %q", cmd.Name(), strings.Join(args, " "))
	}
	return nil
}

// unknownCommand is the usage error for a word that names none of cmd's
// subcommands. A custom Args turns cobra's own suggestions off, so the
// nearest subcommand is offered here, as a mistyped flag or circuit gets it.
func unknownCommand(cmd *cobra.Command, typed string) error {
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, set only on its own path
	}
	what := "unknown command"
	if cmd.HasParent() {
		what = "unknown " + cmd.Name() + " command"
	}
	if s := cmd.SuggestionsFor(typed); len(s) > 0 {
		return usageErrorf("%s %q (did you mean %s?)", what, typed, s[0])
	}
	return usageErrorf("%s %q", what, typed)
}

func newTripCmd(a *app) *cobra.Command {
	var d time.Duration
	var isNew bool
	cmd := &cobra.Command{
		Use:   "trip NAME [--for DURATION] [--new]",
		Short: "Force a circuit open (for maintenance), until reset or for a while",
		Long: `Force circuit NAME open: every run and call skips it until it is reset, or
for --for DURATION. NAME must be configured or already in the state dir, so
that a typo does not trip a circuit nobody uses; --new trips a new one.`,
		Example: `  fusebox trip zigbee2mqtt --for 10m
  fusebox trip nas-backup              # until 'fusebox reset nas-backup'
  fusebox trip --new garage-door       # a circuit no run has used yet`,
		Args: nameArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			hint := "to trip a new circuit on purpose: fusebox trip --new " + args[0]
			if isNew {
				hint = "" // no check
			}
			return runForce(cmd.Context(), a, args[0], hint, func(ctx context.Context, c *fusebox.Circuits) (breaker.View, error) {
				return c.Trip(ctx, args[0], d, "")
			})
		},
	}
	cmd.Flags().Var(durationValue{&d}, "for", "close again after `DURATION` (default: until reset)")
	cmd.Flags().BoolVar(&isNew, "new", false, "trip NAME although no config or state names it yet")
	cmd.ValidArgsFunction = completeNames(a, false, false)
	return cmd
}

func newResetCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:               "reset NAME",
		Short:             "Close a circuit and forget its failures (totals are kept)",
		Args:              nameArg,
		ValidArgsFunction: completeNames(a, false, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runForce(cmd.Context(), a, args[0], "nothing to reset", func(ctx context.Context, c *fusebox.Circuits) (breaker.View, error) {
				return c.Reset(ctx, args[0], "")
			})
		},
	}
}

// runForce trips or resets a circuit and says what it did. A name neither
// configured nor stored is refused with unknown's hint, unless unknown is
// "" (trip --new).
func runForce(ctx context.Context, a *app, name, unknown string, force func(context.Context, *fusebox.Circuits) (breaker.View, error)) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	store := a.openStore(cfg)
	defer store.Close()
	if unknown != "" {
		if err := unknownName(ctx, cfg, store, name, unknown); err != nil {
			return err
		}
	}
	n := a.newNotifier(cfg, store)
	c := a.circuits(store, n.listener()...)
	v, err := force(ctx, c)
	if err != nil {
		return err
	}
	switch {
	case v.Phase == breaker.ForcedOpen && v.ReopensIn > 0:
		fmt.Fprintf(a.stdout, "%s: forced open; closes in %s\n", name, v.ReopensIn.Round(time.Second))
	case v.Phase == breaker.ForcedOpen:
		fmt.Fprintf(a.stdout, "%s: forced open until 'fusebox reset %s'\n", name, name)
	default:
		fmt.Fprintf(a.stdout, "%s: %s\n", name, v.Phase)
	}
	n.finish(c, nil, nil) // after the line saying what was done
	return nil
}

func newGCCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "gc",
		Short: "Remove circuits unused for gc_after (7 days) and events older than history.keep (30 days)",
		Long: `Remove the state of circuits not used for gc_after (default 7 days), stored
answers as old, and events older than history.keep (default 30 days). fusebox also does this by
itself, at most once an hour, so there is rarely a need to run it.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			store := a.openStore(cfg)
			defer store.Close()
			after, keep := retention.GCAfter, retention.Events
			if cfg != nil {
				after, keep = cfg.GCAfter, cfg.HistoryKeep
			}
			r, err := store.GC(cmd.Context(), a.clock.Now().Wall, after, keep)
			if err != nil {
				return fmt.Errorf("gc: %w", err)
			}
			where := "" // the store named; said only when it was not the one used
			if statestore.Down(store) != nil {
				where = " in the local replica " + statestore.ReplicaDir(a.localDir(), a.stateDir(cfg), "") + " (the shared state store is unreachable)"
			}
			fmt.Fprintf(a.stdout, "removed %d circuit(s), %d answer(s), %d event(s)%s\n", len(r.Circuits), len(r.Answers), r.Events, where)
			for _, n := range r.Circuits {
				fmt.Fprintf(a.stdout, "  circuit %s\n", n)
			}
			return nil
		},
	}
}

func newValidateCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "validate [--config FILE]",
		Short: "Check the config and say what it defines",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			if cfg == nil {
				return &configError{err: fmt.Errorf("no config file found (looked at --config, $FUSEBOX_CONFIG, %s/.config/fusebox/config.yaml, /etc/fusebox/config.yaml)", a.home)}
			}
			endpoints := 0
			for _, c := range cfg.Circuits {
				if c.Endpoint != nil {
					endpoints++
				}
			}
			fmt.Fprintf(a.stdout, "%s: ok (%d circuits, %d of them HTTP endpoints, %d chains; state dir %s)\n",
				cfg.Path, len(cfg.Circuits), endpoints, len(cfg.Chains), a.stateShown(cfg))
			for _, w := range cfg.Warnings() {
				fmt.Fprintln(a.stderr, "warning:", w)
			}
			return nil
		},
	}
}

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  noArgs,
		Run: func(cmd *cobra.Command, args []string) {
			fmt.Fprintln(a.stdout, "fusebox", versionString())
		},
	}
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v := bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " (" + s.Value[:12] + ")"
			}
		}
		if v != "" {
			return v
		}
	}
	return "(devel)"
}
