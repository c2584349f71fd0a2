package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/events"
)

func sessionsEvents(g *app.Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "events ID",
		Short: "Print a session's raw events (--json: one JSON object per line)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := g.Open()
			if err != nil {
				return err
			}
			defer a.Close()
			ctx := cmd.Context()
			id := args[0]
			// The raw log needs no projection, except to resolve a prefix.
			rs, err := a.Store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
			if err == nil && len(rs) == 0 {
				if err := a.Fresh(ctx); err != nil {
					return err
				}
				s, ferr := findSession(cmd, a, id)
				if ferr != nil {
					return ferr
				}
				rs, err = a.Store.ReadStream(ctx, events.SessionStream(s.ID), events.Forward, 0, 0)
			}
			if errors.Is(err, events.ErrStreamDeleted) {
				return fmt.Errorf("session %s was deleted", id)
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			enc := json.NewEncoder(out)
			if !asJSON {
				fmt.Fprintf(out, "%6s  %4s  %-23s  %-22s %s  %s  %s\n", "POS", "REV", "TIME", "TYPE", "VER", "TURN", "PAYLOAD")
			}
			for _, r := range rs {
				if asJSON {
					if err := enc.Encode(r); err != nil {
						return err
					}
					continue
				}
				fmt.Fprintf(out, "%6d  %4d  %s  %-22s v%d  turn=%s  %s\n", r.Position, r.Revision, r.Time.Local().Format("2006-01-02 15:04:05.000"),
					r.Type, r.Version, r.TurnID, clip(string(r.Payload), 120))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per line")
	return cmd
}
