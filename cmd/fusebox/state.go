package main

import (
	"fmt"
	"os"
	"os/user"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/fusebox-hq/fusebox/file"
)

func newStateCmd(a *app) *cobra.Command {
	state := &cobra.Command{
		Use:   "state",
		Short: "Prepare the state dir",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	var group string
	initCmd := &cobra.Command{
		Use:   "init --group GROUP [DIR]",
		Short: "Share the state dir with a group, so every user in it shares its circuits",
		Long: `Make DIR (default: the state dir fusebox would use) a state dir shared by the
users of GROUP: owned by that group, setgid, mode 2770, and what is already
in it group-readable and writable. fusebox then accepts it from any member,
whoever owns it, and creates its files 0660 there whatever the umask. It
still refuses a dir every user may write to, and never follows a symlink.

Run it as the dir's owner or root, then add each user (Home Assistant,
Node-RED, root's cron) to GROUP and point them at DIR.`,
		Example: `  sudo groupadd homeauto && sudo usermod -aG homeauto homeassistant
  sudo fusebox state init --group homeauto /var/lib/fusebox`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErrorf("state init takes at most one DIR, got %d", len(args))
			}
			if group == "" {
				return usageErrorf("state init needs --group GROUP")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			gid, err := lookupGroup(group)
			if err != nil {
				return &usageError{msg: err.Error()}
			}
			dir := ""
			if len(args) == 1 {
				dir = args[0]
			} else {
				cfg, err := a.loadConfig()
				if err != nil {
					return err
				}
				dir = a.stateDir(cfg)
			}
			if err := file.InitShared(dir, gid); err != nil {
				return fmt.Errorf("state init: %w", err)
			}
			fi, err := os.Stat(dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s: shared with group %s (gid %d), mode %s; add each user to the group and point them at this dir (--state, $FUSEBOX_STATE_DIR or the config's state:)\n",
				dir, group, gid, fi.Mode())
			return nil
		},
	}
	initCmd.Flags().StringVar(&group, "group", "", "the `GROUP` (name or gid) whose users share the dir")
	state.AddCommand(initCmd)
	return state
}

// lookupGroup returns the gid of a group name, or of a number.
func lookupGroup(name string) (int, error) {
	if gid, err := strconv.Atoi(name); err == nil && gid >= 0 {
		return gid, nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, fmt.Errorf("--group: %w", err)
	}
	return strconv.Atoi(g.Gid)
}
