package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

// sessionsRenameOptions are the flags and arguments of `hermes sessions rename`.
type sessionsRenameOptions struct {
	app   *app.Factory
	io    app.IOStreams
	id    string
	title []string
}

// sessionsRename gives a session a title: a SessionTitled event, appended
// while holding the session's lease, so that a chat running it is not
// written under (it says so: /title renames from inside that chat).
func sessionsRename(g *app.Factory) *cobra.Command {
	opts := &sessionsRenameOptions{app: g}
	cmd := &cobra.Command{
		Use:   "rename ID TITLE...",
		Short: "Give a session a title (shown by sessions list)",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.id = args[0]
			opts.title = args[1:]
			return runSessionsRename(cmd.Context(), opts)
		},
	}
	return cmd
}

// runSessionsRename runs `hermes sessions rename`.
func runSessionsRename(ctx context.Context, opts *sessionsRenameOptions) error {
	title := strings.TrimSpace(strings.Join(opts.title, " "))
	if title == "" {
		return errors.New("the title is empty")
	}
	return withSession(ctx, opts.app, opts.id, func(a *app.App, s sessions.Summary) error {
		lease, err := a.Leases(session.ThisProcess()).Lease(s.ID)
		var inUse *session.InUseError
		if errors.As(err, &inUse) {
			return fmt.Errorf("%w: rename it from that chat with /title %s", err, title)
		}
		if err != nil {
			return err
		}
		defer lease.Release()
		stream := events.SessionStream(s.ID)
		last, err := a.Store.ReadStream(ctx, stream, events.Backward, events.End, 1)
		if err != nil {
			return err
		}
		if len(last) == 0 {
			return fmt.Errorf("no session %s", s.ID)
		}
		env, err := schema.NewEnvelope(schema.Meta{SessionID: s.ID, CausationID: last[0].ID}, schema.SessionTitled{Title: title})
		if err != nil {
			return err
		}
		if _, err := a.Store.Append(ctx, stream, events.Exact(last[0].Revision), env); err != nil {
			return fmt.Errorf("rename %s: %w", s.ID, err)
		}
		if err := a.Fresh(ctx); err != nil {
			return err
		}
		fmt.Fprintf(opts.io.Out, "session %s: %q\n", s.ID, title)
		return nil
	})
}
