package main

import (
	"errors"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fusebox-hq/fusebox/config"
)

// flagError is the usage error for a command line pflag refused, the
// tree's FlagErrorFunc.
func flagError(cmd *cobra.Command, err error) error { return flagSetError(cmd.Flags(), err) }

// flagSetError is the usage error for err, which parsing fs returned. An
// unknown flag a typo away from one of fs's gets the same "did you mean" a
// mistyped circuit name does; so does a long flag given with one dash
// (-attempts), which pflag reads as shorthands.
func flagSetError(fs *pflag.FlagSet, err error) error {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) {
		return &usageError{msg: err.Error()}
	}
	typed := ne.GetSpecifiedName()
	if short := ne.GetSpecifiedShortnames(); short != "" {
		if len(short) < 2 {
			return &usageError{msg: err.Error()}
		}
		typed = short
	}
	var long []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			long = append(long, f.Name)
		}
	})
	if s := config.Nearest(typed, long); s != "" {
		return usageErrorf("%v (did you mean --%s?)", err, s)
	}
	return &usageError{msg: err.Error()}
}
