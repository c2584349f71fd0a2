package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/sessions"
)

func sessionsDelete(g *app.Factory) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "delete ID",
		Short: "Erase a session: its events are deleted and every read model drops it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSession(g, cmd, args[0], func(a *app.App, s sessions.Summary) error {
				ctx := cmd.Context()
				if f, ok := cmd.InOrStdin().(*os.File); !yes && ok && isatty.IsTerminal(f.Fd()) {
					fmt.Fprintf(cmd.ErrOrStderr(), "Erase session %s %q (%d messages)? Its events are deleted for good. [y/N] ", s.ID, s.Title, s.Messages)
					line, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
					if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
						return errors.New("not deleted")
					}
				}
				// A session another process runs is not pulled from under it.
				lease, err := a.Leases(session.ThisProcess()).Lease(s.ID)
				if err != nil {
					return err
				}
				defer lease.Release()
				if err := a.Store.DeleteStream(ctx, events.SessionStream(s.ID), events.Any); err != nil {
					return err
				}
				if err := a.Fresh(ctx); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted session %s\n", s.ID)
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}
