package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/projections/sessions"
)

// lostSessions adds a "lost" problem to rep for every session the home's
// session list knows from log (up to its checkpoint) that store does not
// hold: neither its events nor the tombstone of a deletion. store is nil
// when no log is there at all; a session list built from another log than
// log is not compared.
func lostSessions(ctx context.Context, home string, store *embedded.Store, log string, rep *embedded.Report) error {
	if log == "" {
		return nil
	}
	// A private copy: verify writes nothing, in a read-only home too.
	pdb, err := projections.OpenScratch(filepath.Join(home, "projections.db"))
	if err != nil {
		return err
	}
	defer pdb.Close()
	p := pdb.Projection(sessions.NewModel())
	c, ok := p.(projections.Contiguous)
	if !ok {
		return nil
	}
	origin, err := c.Origin(ctx)
	if err != nil || origin != log {
		return err
	}
	cp, err := p.Checkpoint(ctx)
	if err != nil {
		return err
	}
	list, err := sessions.Dump(ctx, pdb.Reader())
	if err != nil {
		return err
	}
	for _, s := range list {
		stream := events.SessionStream(s.ID)
		if store != nil && store.Identity().ID == log {
			rs, err := store.ReadStream(ctx, stream, events.Backward, events.End, 1)
			if len(rs) > 0 || errors.Is(err, events.ErrStreamDeleted) {
				continue
			}
			var ce *events.CorruptEventError
			if errors.As(err, &ce) {
				continue // damage: reported by the store's own check
			}
			if err != nil {
				return err
			}
		}
		rep.Problems = append(rep.Problems, embedded.Problem{Kind: "lost", Stream: stream,
			Detail: fmt.Sprintf("projections.db lists this session (%q, %d messages, last active %s) from log %s up to position %d; the log has no event of it",
				s.Title, s.Messages, s.LastActive.Local().Format(time.DateTime), log, cp)})
	}
	return nil
}

// lostReport is verify's report when the store refuses to open because
// its log is lost: the loss, what the file there holds now (if anything),
// and the sessions the home knew of that are gone with it.
func lostReport(ctx context.Context, g *app.Factory, home string, lost *events.LogLostError) (*embedded.Report, error) {
	rep := &embedded.Report{File: lost.Path, Problems: []embedded.Problem{{Kind: "lost", Detail: lost.Error()}}, Quarantined: []embedded.Moved{}}
	var there *embedded.Store
	if s, err := embedded.OpenReadOnly(lost.Path, embedded.WithLogger(g.Log)); err == nil {
		defer s.Close()
		there = s
		if now, err := s.Verify(ctx); err == nil {
			now.Problems = append(rep.Problems, now.Problems...)
			rep = now
		}
	}
	if err := lostSessions(ctx, home, there, lost.Log, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// storeAcceptOptions are the flags and arguments of `hermes store accept`.
type storeAcceptOptions struct {
	app *app.Factory
	io  app.IOStreams
}

func storeAccept(g *app.Factory) *cobra.Command {
	opts := &storeAcceptOptions{app: g}
	cmd := &cobra.Command{
		Use:   "accept",
		Short: "Take events.db as it is now as this home's event log (after restoring it from a backup, or deleting it on purpose) and rebuild the read models from it",
		Long: `When events.db is missing, holds another log, or ends before what was
acknowledged, every command refuses to open it rather than carry on with a
log that lost sessions. Restore it from a backup (or the copy a running
hermes saved beside it, events-rescued-*.db) and run hermes store verify.

If what is there now is what you want — an older backup, or a new, empty
log after deleting events.db on purpose — accept records it as this
home's log (in ` + app.WitnessFile + `) and rebuilds the read models from it:
what the old log held beyond it is given up.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runStoreAccept(cmd.Context(), opts)
		},
	}
	return cmd
}

// runStoreAccept runs `hermes store accept`.
func runStoreAccept(ctx context.Context, opts *storeAcceptOptions) error {
	if opts.app.ReadOnly {
		return fmt.Errorf("accept writes the home: drop --read-only")
	}
	home, err := opts.app.ResolveHome()
	if err != nil {
		return err
	}
	if err := opts.app.EmbeddedOnly(home, "store accept"); err != nil {
		return err
	}
	out := opts.io.Out
	s, err := opts.app.OpenEmbedded(home)
	var lost *events.LogLostError
	if err == nil {
		s.Close()
		fmt.Fprintln(out, "the event log is the one this home remembers: nothing to accept")
		return nil
	} else if !errors.As(err, &lost) {
		return err
	}
	fmt.Fprintf(out, "giving up: %s\n", lost.Error())
	opts.app.AcceptLog = true
	a, err := opts.app.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.Runner.Rebuild(ctx, ""); err != nil {
		return err
	}
	head, err := a.Store.Head(ctx)
	if err != nil {
		return err
	}
	id := ""
	if e, ok := a.Store.(*embedded.Store); ok {
		id = e.Identity().ID
	}
	fmt.Fprintf(out, "accepted log %s (head at position %d) as this home's; the read models were rebuilt from it\n", id, head)
	return nil
}
