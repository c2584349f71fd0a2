package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/internal/typo"
)

// unknownCommand refuses the arguments of a command group (or of the root)
// that name none of its commands, suggesting the nearest: cobra would print
// the help and exit 0 (a group) or suggest only by its own rules (the
// root).
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	name := args[0]
	msg := fmt.Sprintf("unknown command %q for %q", name, cmd.CommandPath())
	if s := nearestCommand(cmd, name); s != "" {
		msg += ": did you mean " + strings.TrimSpace(cmd.CommandPath()+" "+s) + "?"
	} else {
		msg += fmt.Sprintf(": %s --help lists its commands", cmd.CommandPath())
	}
	return &exitError{code: 1, err: fmt.Errorf("%s", msg)}
}

// nearestCommand is the command of cmd nearest name: one whose name or
// alias starts with it, or is at most two edits away (one for short names).
func nearestCommand(cmd *cobra.Command, name string) string {
	best, found := 3, ""
	if len(name) <= 3 {
		best = 2
	}
	for _, c := range cmd.Commands() {
		if !c.IsAvailableCommand() && c.Name() != "help" {
			continue
		}
		for _, n := range append([]string{c.Name()}, c.Aliases...) {
			d := typo.Distance(strings.ToLower(name), n)
			if len(name) > 1 && strings.HasPrefix(n, strings.ToLower(name)) {
				d = 1
			}
			if d < best {
				best, found = d, c.Name()
			}
		}
	}
	return found
}

// refuseUnknownSubcommands makes every command group under root refuse an
// unknown subcommand (unknownCommand) instead of printing its help and
// exiting 0; a group typed alone still shows its help.
func refuseUnknownSubcommands(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.HasSubCommands() && !c.Runnable() {
			c.Args = unknownCommand
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
		refuseUnknownSubcommands(c)
	}
}
