package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/tools/skills"
)

// skillsListCmd is `hermes skills list`.
func skillsListCmd(lib func() (skills.Library, error)) *cobra.Command {
	return &cobra.Command{
		Use: "list", Short: "List skills", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := lib()
			if err != nil {
				return err
			}
			all, errs := l.All()
			for _, e := range errs {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", e)
			}
			if len(all) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no skills yet")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tDESCRIPTION\tPATH")
			for _, s := range all {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, clip(s.Description, 60), s.Path)
			}
			return tw.Flush()
		},
	}
}
