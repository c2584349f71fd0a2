package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/events"
)

// sessionsEventsOptions are the flags and arguments of `hermes sessions events`.
type sessionsEventsOptions struct {
	app    *app.Factory
	io     app.IOStreams
	id     string
	asJSON bool
}

func sessionsEvents(g *app.Factory) *cobra.Command {
	opts := &sessionsEventsOptions{app: g}
	cmd := &cobra.Command{
		Use:   "events ID",
		Short: "Print a session's raw events (--json: one JSON object per line)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.id = args[0]
			return runSessionsEvents(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.asJSON, "json", false, "one JSON object per line")
	return cmd
}

// runSessionsEvents runs `hermes sessions events`.
func runSessionsEvents(ctx context.Context, opts *sessionsEventsOptions) error {
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	id := opts.id
	// The raw log needs no projection, except to resolve a prefix.
	rs, err := a.Store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
	if err == nil && len(rs) == 0 {
		if err := a.Fresh(ctx); err != nil {
			return err
		}
		s, ferr := findSession(ctx, a, id)
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
	out := opts.io.Out
	enc := json.NewEncoder(out)
	if !opts.asJSON {
		fmt.Fprintf(out, "%6s  %4s  %-23s  %-22s %s  %s  %s\n", "POS", "REV", "TIME", "TYPE", "VER", "TURN", "PAYLOAD")
	}
	for _, r := range rs {
		if opts.asJSON {
			if err := enc.Encode(r); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(out, "%6d  %4d  %s  %-22s v%d  turn=%s  %s\n", r.Position, r.Revision, r.Time.Local().Format("2006-01-02 15:04:05.000"),
			r.Type, r.Version, r.TurnID, clip(string(r.Payload), 120))
	}
	return nil
}
