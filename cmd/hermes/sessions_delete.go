package main

import (
	"bufio"
	"context"
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

// sessionsDeleteOptions are the flags and arguments of `hermes sessions delete`.
type sessionsDeleteOptions struct {
	app *app.Factory
	io  app.IOStreams
	id  string
	yes bool
}

func sessionsDelete(g *app.Factory) *cobra.Command {
	opts := &sessionsDeleteOptions{app: g}
	cmd := &cobra.Command{
		Use:   "delete ID",
		Short: "Erase a session: its events are deleted and every read model drops it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.id = args[0]
			return runSessionsDelete(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

// runSessionsDelete runs `hermes sessions delete`.
func runSessionsDelete(ctx context.Context, opts *sessionsDeleteOptions) error {
	return withSession(ctx, opts.app, opts.id, func(a *app.App, s sessions.Summary) error {
		if f, ok := opts.io.In.(*os.File); !opts.yes && ok && isatty.IsTerminal(f.Fd()) {
			fmt.Fprintf(opts.io.ErrOut, "Erase session %s %q (%d messages)? Its events are deleted for good. [y/N] ", s.ID, s.Title, s.Messages)
			line, _ := bufio.NewReader(opts.io.In).ReadString('\n')
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
		fmt.Fprintf(opts.io.Out, "deleted session %s\n", s.ID)
		return nil
	})
}
