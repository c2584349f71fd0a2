package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// skillsPinCmd is `hermes skills pin` (on) or `hermes skills unpin`: a
// pinned skill is never archived nor consolidated by the curator.
func skillsPinCmd(g *app.Factory, on bool) *cobra.Command {
	use, short := "pin NAME", "Pin a skill: the curator never archives nor consolidates it"
	if !on {
		use, short = "unpin NAME", "Unpin a skill: the curator may propose archiving it again"
	}
	return &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := g.Open()
			if err != nil {
				return err
			}
			defer a.Close()
			k := skillsKeeper(a)
			name := args[0]
			if on {
				l, err := skillsLibrary(g)
				if err != nil {
					return err
				}
				if _, err := l.Get(name); err != nil {
					return err
				}
			}
			if err := k.Pin(name, on); err != nil {
				return err
			}
			pins, err := k.Pinned()
			if err != nil {
				return err
			}
			out := ioOf(cmd).Out
			switch {
			case on:
				fmt.Fprintf(out, "pinned %s: the curator leaves it alone\n", name)
			case pins[name]:
				fmt.Fprintf(out, "%s is still pinned by the Python Hermes Agent (skills/.usage.json): unpin it there too\n", name)
			default:
				fmt.Fprintf(out, "unpinned %s\n", name)
			}
			return nil
		}}
}
