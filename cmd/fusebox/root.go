package main

import (
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// addGlobalFlags adds the flags every command takes.
func addGlobalFlags(fs *pflag.FlagSet, a *app) {
	fs.StringVar(&a.stateFlag, "state", "", "state `DIR` or redis:// URL (default: see fusebox --help)")
	fs.StringVar(&a.configFlag, "config", "", "config `FILE` (default: see fusebox --help)")
	fs.StringVar(&a.log.Format, "log-format", "text", "stderr log format: text or json")
	fs.BoolVarP(&a.log.Quiet, "quiet", "q", false, "log fusebox's own trouble only (errors)")
	fs.BoolVarP(&a.log.Verbose, "verbose", "v", false, "log every attempt, wait and skip")
}

// configUses names the circuits whose config values cmd uses, when it uses
// no others' (see app.config.uses); nil for a command that may use any.
func configUses(cmd *cobra.Command, args []string) []string {
	switch cmd.Name() {
	case "status", "history", "trip", "reset", "gc":
		return append([]string{}, args...)
	}
	return nil
}

// subcommand is one of fusebox's commands: the name it is run by, and its
// constructor.
type subcommand struct {
	name string
	new  func(*app) *cobra.Command
}

var subcommands = []subcommand{
	{"run", newRunCmd},
	{"call", newCallCmd},
	{"demo", newDemoCmd},
	{"status", newStatusCmd},
	{"explain", newExplainCmd},
	{"history", newHistoryCmd},
	{"trip", newTripCmd},
	{"reset", newResetCmd},
	{"gc", newGCCmd},
	{"validate", newValidateCmd},
	{"serve", newServeCmd},
	{"version", newVersionCmd},
	{"state", newStateCmd},
}

func isSubcommand(name string) bool {
	return slices.ContainsFunc(subcommands, func(c subcommand) bool { return c.name == name })
}

// newRootCmd builds the command tree for the command line args: when its
// first word names a command (what cron runs: fusebox run NAME -- ...),
// that command alone, else every command (for help, completion and
// suggestions).
func newRootCmd(a *app, args ...string) *cobra.Command {
	root := &cobra.Command{
		Use:   "fusebox",
		Short: "Retries with backoff and persistent circuit breakers for scripts",
		Long: `fusebox keeps scripts from hanging on, and hammering, APIs that are down.

It retries a failing command or HTTP endpoint with exponential backoff and
jitter, and keeps a circuit breaker per name in a state directory shared by
every process on the host: once an endpoint has failed, the next runs skip it
in milliseconds (exit 75) until exactly one caller probes whether it is back.

Exit status:
  0    success
  N    run: the command's own exit status, when every attempt failed
  124  run: the last attempt hit --timeout
  126  run: the command cannot be executed; 127: not found
  64   usage error (bad flag or argument)
  69   call: every endpoint failed
  75   the circuit is open (every endpoint skipped): nothing was run
  78   config error
  128+N interrupted by signal N: 129 SIGHUP, 130 SIGINT, 131 SIGQUIT,
       143 SIGTERM; 141 stdout or stderr is a closed pipe

State dir: --state, else $FUSEBOX_STATE_DIR, else the config's state:, else
$STATE_DIRECTORY (systemd), else /var/lib/fusebox (root, and the user whose
home it is), else $XDG_STATE_HOME/fusebox (~/.local/state/fusebox). Any of
the first three may be redis://[user:pass@]host:6379/0 (rediss:// for TLS)
to share circuits across hosts; the default dir then holds this host's
replica of them, which stands in while Redis is down.
Config: --config, else $FUSEBOX_CONFIG, else ~/.config/fusebox/config.yaml,
else /etc/fusebox/config.yaml; none is needed.`,
		Example: `  fusebox demo                          # a 20-second tour on a flaky API of its own
  fusebox run zigbee2mqtt -- curl -fsS http://zigbee.lan:8080/api/health
  fusebox status
  fusebox trip zigbee2mqtt --for 10m    # maintenance: skip it for 10 minutes`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(cmd, args[0])
			}
			return nil
		},
		RunE:          func(cmd *cobra.Command, args []string) error { return cmd.Help() },
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			a.config.uses = configUses(cmd, args)
			return a.setup()
		},
	}
	addGlobalFlags(root.PersistentFlags(), a)
	root.Version = versionString()
	root.SetVersionTemplate("fusebox {{.Version}}\n") // as fusebox version prints it
	root.SetFlagErrorFunc(flagError)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)

	for _, c := range subcommands {
		if len(args) == 0 || !isSubcommand(args[0]) || args[0] == c.name {
			root.AddCommand(c.new(a))
		}
	}
	return root
}
