package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// skillsTapCmd is `hermes skills tap`, with list, add and remove: the
// sources `hermes skills search` looks through.
func skillsTapCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "tap", Short: "List, add and remove the sources (git repositories, well-known indexes) skills search looks through"}
	list := &cobra.Command{Use: "list", Short: "List the taps", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := g.ResolveHome()
			if err != nil {
				return err
			}
			_, taps := skillHub(home)
			ids, err := taps.List()
			if err != nil {
				return err
			}
			out := ioOf(cmd).Out
			if len(ids) == 0 {
				fmt.Fprintln(out, "no taps: hermes skills tap add SOURCE adds one")
			}
			for _, id := range ids {
				fmt.Fprintln(out, id)
			}
			return nil
		}}
	add := &cobra.Command{Use: "add SOURCE", Short: "Add a tap: owner/repo[/path], git+URL[//path], or https://host (its well-known index)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := g.ResolveHome()
			if err != nil {
				return err
			}
			_, taps := skillHub(home)
			id, err := taps.Add(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(ioOf(cmd).Out, "added tap %s\n", id)
			return nil
		}}
	remove := &cobra.Command{Use: "remove SOURCE", Short: "Remove a tap", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := g.ResolveHome()
			if err != nil {
				return err
			}
			_, taps := skillHub(home)
			if err := taps.Remove(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(ioOf(cmd).Out, "removed tap %s\n", args[0])
			return nil
		}}
	cmd.AddCommand(list, add, remove)
	return cmd
}
