package main

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/file"
)

// Flags of "run" and the global flags, as the fast path must know them to
// find the circuit name without building the command tree.
var (
	fastValueFlags = map[string]bool{
		"state": true, "config": true, "log-format": true,
		"attempts": true, "backoff": true, "max-delay": true, "jitter": true,
		"timeout": true, "deadline": true, "trip-after": true, "open-for": true,
		"open-max": true, "retry-on-exit": true,
	}
	fastBoolFlags = map[string]bool{"quiet": true, "q": true, "verbose": true, "v": true, "stream": true}
)

// fastSkip handles "fusebox run NAME -- COMMAND" on an open circuit before
// anything else is built: every cron run against a dead endpoint pays only for
// reading one state file. It reports false (and has done nothing) whenever it
// is not sure; the full command then decides.
func fastSkip(args []string) (int, bool) {
	if len(args) < 3 || args[0] != "run" {
		return 0, false
	}
	a := newApp()
	name := ""
	for i := 1; i < len(args) && name == ""; i++ {
		arg := args[i]
		switch {
		case arg == "--":
			return 0, false
		case arg == "-q":
			a.log.quiet = true
		case arg == "-v":
			a.log.verbose = true
		case strings.HasPrefix(arg, "--"):
			flag, val, hasVal := strings.Cut(arg[2:], "=")
			switch {
			case fastBoolFlags[flag] && !hasVal:
				a.log.quiet = a.log.quiet || flag == "quiet"
				a.log.verbose = a.log.verbose || flag == "verbose"
			case fastValueFlags[flag]:
				if !hasVal {
					if i+1 >= len(args) {
						return 0, false
					}
					i++
					val = args[i]
				}
				switch flag {
				case "state":
					a.stateFlag = val
				case "config":
					a.configFlag = val
				case "log-format":
					a.log.format = val
				}
			default:
				return 0, false
			}
		case strings.HasPrefix(arg, "-"):
			return 0, false
		default:
			name = arg
			rest := args[i+1:]
			if len(rest) > 0 && rest[0] == "--" {
				rest = rest[1:]
			}
			if len(rest) == 0 {
				return 0, false
			}
		}
	}
	if name == "" || fusebox.ValidateName(name) != nil || a.log.validate() != nil {
		return 0, false
	}

	var cfg *config.Config
	if a.stateFlag == "" && a.getenv("FUSEBOX_STATE_DIR") == "" {
		// The config may name the state dir.
		if path, _ := config.Find(a.configFlag, a.getenv, a.home); path != "" {
			c, err := config.Load(path)
			if err != nil {
				return 0, false
			}
			cfg = c
		}
	}
	// The only line logged here is the skip: a validated name and a duration,
	// nothing to redact.
	a.logger = newLogger(a.stderr, a.log, nil, journalStream(a.getenv, a.stderrFile))
	dir := a.stateDir(cfg)
	if _, err := os.Stat(dir); err != nil {
		return 0, false // no state yet, so no open circuit; and nothing is created here
	}
	store, err := file.Open(dir, file.WithLogger(a.logger))
	if err != nil {
		return 0, false
	}
	defer store.Close()
	circuits := fusebox.New(store, fusebox.WithClock(a.clock), fusebox.WithLogger(a.logger))
	if err := circuits.Check(context.Background(), name); errors.Is(err, fusebox.ErrOpen) {
		return exitOpen, true
	}
	return 0, false
}
