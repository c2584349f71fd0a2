package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/tools/memory"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/events/postgres"
	"github.com/hermes-go/hermes/internal/sqlite"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/projections/costs"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/projections/lineage"
	"github.com/hermes-go/hermes/projections/sessions"
)

// globals are the flags every command shares.
type globals struct {
	home     string
	logLevel string
	readOnly bool
	store    string // --store: "" (config, then embedded), embedded, postgres://…, esdb://…
	log      zerolog.Logger
	// acceptLog opens the embedded store taking its log as it is (hermes
	// store accept).
	acceptLog bool
}

// app is what a command works with: the store, the projections and the
// runner that feeds them, all under one $HERMES_HOME.
type app struct {
	home   string
	log    zerolog.Logger
	store  events.Store
	spec   config.StoreSpec // the store's kind, which says where the projections are
	projDB *projections.DB
	// local is the home's projections.db when projDB is shared: it keeps
	// the origins of the projections kept in the home (the memory files).
	local  *projections.DB
	runner *projections.Runner

	// locksMu guards lockSet (see locks).
	locksMu sync.Mutex
	lockSet map[string]*postgres.Locks
}

// resolveHome is --home, else $HERMES_HOME, else ~/.hermes.
func (g *globals) resolveHome() (string, error) { return config.Home(g.home) }

func (g *globals) setup() error {
	lvl, err := config.LogLevel(g.logLevel)
	if err != nil {
		return err
	}
	g.log = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, NoColor: true}).Level(lvl).With().Timestamp().Logger()
	return nil
}

// readOnlyHome reports whether home must be opened without writing: asked
// for with --read-only, or its directory or database files cannot be
// written by this process.
func (g *globals) readOnlyHome(home string) bool {
	if g.readOnly || !sqlite.Writable(home) {
		return true
	}
	for _, f := range []string{"events.db", "projections.db"} {
		p := filepath.Join(home, f)
		if _, err := os.Stat(p); err == nil && !sqlite.Writable(p) {
			return true
		}
	}
	return false
}

// openStore opens the event store of home: the one --store or config.yaml's
// store: names (see storesel.go), and for the embedded store read-only
// when the home is.
func (g *globals) openStore(home string) (events.Store, error) {
	spec, err := g.storeSpec(home)
	if err != nil {
		return nil, err
	}
	if spec.Kind != config.StoreEmbedded {
		if g.readOnlyHome(home) {
			return nil, fmt.Errorf("--read-only (or a home that cannot be written) works with the embedded store only; the store is %s", spec)
		}
		return openSpec(context.Background(), spec, home, g.log)
	}
	return g.openEmbedded(home)
}

// openEmbedded opens home's embedded store: read-only when the home is.
// A log the home remembers that is gone, replaced or shorter is an
// *events.LogLostError (see storeguard.go).
func (g *globals) openEmbedded(home string) (*embedded.Store, error) {
	path := filepath.Join(home, "events.db")
	if g.readOnlyHome(home) {
		g.log.Debug().Str("home", home).Msg("home is read-only: opening the event log read-only")
		return embedded.OpenReadOnly(path, g.embeddedOptions(home)...)
	}
	return embedded.Open(path, g.embeddedOptions(home)...)
}

// open opens the store and projections of $HERMES_HOME. In a read-only home
// the projections are a private copy (see projections.OpenScratch) that
// read commands catch up from the log; commands that write fail. With a
// PostgreSQL store the table projections are in that database, shared by
// every home using it (see openProjections).
func (g *globals) open() (*app, error) {
	home, err := g.resolveHome()
	if err != nil {
		return nil, err
	}
	ro := g.readOnlyHome(home)
	store, err := g.openStore(home)
	if err != nil {
		return nil, err
	}
	spec, err := g.storeSpec(home)
	if err != nil {
		store.Close()
		return nil, err
	}
	a := &app{home: home, log: g.log, store: store, spec: spec}
	var pdb *projections.DB
	if ro {
		pdb, err = projections.OpenScratch(filepath.Join(home, "projections.db"))
	} else {
		pdb, err = a.openProjections(context.Background())
	}
	if err != nil {
		store.Close()
		return nil, err
	}
	a.projDB = pdb
	var origins projections.Origins = pdb
	if !ro && pdb.Shared() {
		// The memory files are this home's alone: their checkpoint, and the
		// log they were built from, are kept in the home, not where every
		// home would read them.
		if a.local, err = projections.OpenDB(filepath.Join(home, "projections.db")); err != nil {
			pdb.Close()
			store.Close()
			return nil, err
		}
		origins = a.local
	}
	projs := []projections.Projection{
		pdb.Projection(sessions.NewModel()),
		pdb.Projection(history.NewModel()),
		pdb.Projection(lineage.NewModel()),
		pdb.Projection(costs.NewModel()),
	}
	if !ro {
		local := pdb // the memory files' checkpoint is kept in the home, beside them
		if a.local != nil {
			local = a.local
		}
		projs = append(projs, local.Projection(memory.NewFilesModel(filepath.Join(home, "memories"))))
	}
	a.runner = projections.NewRunner(store, g.log, projs...).WithQuarantine(pdb).WithOrigins(origins)
	a.leaseProjections()
	return a, nil
}

// openProjections opens the table projections that go with the app's
// store: with a PostgreSQL store, schema hermes_projections of its
// database, which every process using the store shares; else the home's
// projections.db.
func (a *app) openProjections(ctx context.Context) (*projections.DB, error) {
	if a.spec.Kind == config.StorePostgres {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return projections.OpenPostgres(ctx, a.spec.DSN)
	}
	return projections.OpenDB(filepath.Join(a.home, "projections.db"))
}

// damaged returns the damage that keeps session id (or a session whose id
// starts with it) out of the projections.
func (a *app) damaged(ctx context.Context, id string) (projections.Damage, bool) {
	ds, err := a.runner.Damaged(ctx)
	if err != nil {
		return projections.Damage{}, false
	}
	for _, d := range ds {
		if sid := events.SessionOf(d.Stream); sid != "" && len(id) >= 4 && strings.HasPrefix(sid, id) {
			return d, true
		}
	}
	return projections.Damage{}, false
}

func (a *app) Close() error {
	err := errors.Join(a.closeLocks(), a.projDB.Close())
	if a.local != nil {
		err = errors.Join(err, a.local.Close())
	}
	return errors.Join(err, a.store.Close())
}

// fresh brings the projections up to the end of the log before a read, so
// that what a command shows includes every event appended so far.
func (a *app) fresh(ctx context.Context) error {
	_, err := a.runner.CatchUp(ctx)
	return err
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "hermes",
		Short:         "Hermes: an event-sourced AI agent",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return g.setup()
		},
	}
	root.PersistentFlags().StringVar(&g.home, "home", "", "Hermes home directory (default $HERMES_HOME or ~/.hermes)")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "warn", "diagnostics level on stderr: trace, debug, info, warn, error")
	root.PersistentFlags().StringVar(&g.store, "store", "", "event store: embedded (default), postgres://user@host/db or esdb://host:2113 (default $HERMES_STORE, then store: in config.yaml)")
	root.PersistentFlags().BoolVar(&g.readOnly, "read-only", false, "open the home without writing to it (automatic when its files cannot be written); commands that write fail")
	root.AddCommand(chatCmd(g), sessionsCmd(g), projectionsCmd(g), toolsCmd(g), skillsCmd(g), costsCmd(g), searchCmd(g), importCmd(g), gatewayCmd(g), dashboardCmd(g), nodeCmd(g), pairingCmd(g), approvalsCmd(g), configCmd(g), doctorCmd(g), setupCmd(g), cronCmd(g), mcpCmd(g), storeCmd(g))
	return root
}

// withSession opens the home, brings the projections up to date, resolves
// arg (an id or a unique prefix) and runs fn.
func (g *globals) withSession(cmd *cobra.Command, arg string, fn func(a *app, s sessions.Summary) error) error {
	a, err := g.open()
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.fresh(cmd.Context()); err != nil {
		return err
	}
	s, err := findSession(cmd, a, arg)
	if err != nil {
		return err
	}
	return fn(a, s)
}
