package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/replay"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/adapters/importer"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/sessions"
)

func sessionsReplay(g *app.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "replay ID",
		Short: "Re-run a session's turns with the recorded model answers and tool results, and check every decision matches",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSession(g, cmd, args[0], func(a *app.App, s sessions.Summary) error {
				ctx := cmd.Context()
				rs, err := a.Store.ReadStream(ctx, events.SessionStream(s.ID), events.Forward, 0, 0)
				if err != nil {
					return err
				}
				rep, err := replay.Run(ctx, rs, nil)
				if err != nil {
					return &exitError{code: 1, err: fmt.Errorf("session %s: %w", s.ID, err)}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "replay of %s matches the record: %d turns, %d model calls, %d events\n", s.ID, rep.Turns, rep.Calls, rep.Events)
				return nil
			})
		},
	}
}

func sessionsFork(g *app.Factory) *cobra.Command {
	var at int
	cmd := &cobra.Command{
		Use:   "fork ID --at EVENT",
		Short: "Start a new session whose history is ID's up to event EVENT (a revision, see sessions events)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if at < 0 {
				return fmt.Errorf("--at is required: the revision of the last event to keep (hermes sessions events ID lists them)")
			}
			return withSession(g, cmd, args[0], func(a *app.App, s sessions.Summary) error {
				ctx := cmd.Context()
				id, err := session.Fork(ctx, a.Store, s.ID, uint64(at))
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\n", id)
				fmt.Fprintf(cmd.ErrOrStderr(), "forked %s at event %d; continue with: hermes chat --resume %s\n", s.ID, at, id)
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&at, "at", -1, "revision of the last event the fork keeps")
	return cmd
}

func sessionsExport(g *app.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "export ID",
		Short: "Write a session's events as JSON lines to stdout",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSession(g, cmd, args[0], func(a *app.App, s sessions.Summary) error {
				ctx := cmd.Context()
				n, err := session.Export(ctx, a.Store, s.ID, cmd.OutOrStdout())
				if err == nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "exported %d events of %s\n", n, s.ID)
				}
				return err
			})
		},
	}
}

func sessionsImport(g *app.Factory) *cobra.Command {
	var newID string
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Append exported events as a session (same id, or --id NEWID); - reads stdin",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := cmd.InOrStdin()
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			a, err := g.Open()
			if err != nil {
				return err
			}
			defer a.Close()
			id, n, err := session.Import(cmd.Context(), a.Store, in, newID)
			if err != nil {
				return fmt.Errorf("import %s: %w (nothing was written)", args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", id)
			fmt.Fprintf(cmd.ErrOrStderr(), "imported %d events as session %s\n", n, id)
			return nil
		},
	}
	cmd.Flags().StringVar(&newID, "id", "", "import under this new session id")
	return cmd
}

func importCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "import", Short: "Import history from elsewhere"}
	cmd.AddCommand(&cobra.Command{
		Use:   "hermes-state PATH",
		Short: "Import the sessions of a Python Hermes Agent state.db (sessions already imported are skipped)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := g.Open()
			if err != nil {
				return err
			}
			defer a.Close()
			rep, err := importer.HermesState(cmd.Context(), args[0], a.Store)
			if err != nil {
				return err
			}
			if err := a.Fresh(cmd.Context()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "imported %d sessions (%d messages); %d already there\n", rep.Sessions, rep.Messages, rep.Skipped)
			return nil
		},
	})
	return cmd
}
