// Package app is hermes' composition root: the Factory every command
// starts from (the shared flags and streams), and the wiring they share:
// opening the home's store and projections, locks and leases, the search
// index.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/adapters/hooks"
	"github.com/hermes-go/hermes/adapters/tools/memory"
	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/blobs"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/events/postgres"
	"github.com/hermes-go/hermes/internal/sqlite"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/projections/costs"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/projections/lineage"
	"github.com/hermes-go/hermes/projections/sessions"
)

// Factory is what every command starts from (gh's factory): the flags
// they share, the streams they talk on, and the home, its config and its
// store, opened only when a command asks for them.
type Factory struct {
	// HomeFlag is --home ("": $HERMES_HOME, then ~/.hermes).
	HomeFlag string
	// LogLevel is --log-level.
	LogLevel string
	// ReadOnly is --read-only.
	ReadOnly bool
	// StoreFlag is --store: "" (config, then embedded), embedded,
	// postgres://…, esdb://…
	StoreFlag string
	// Log is the diagnostics logger, on IO.ErrOut (see Setup).
	Log zerolog.Logger
	// AcceptLog opens the embedded store taking its log as it is (hermes
	// store accept).
	AcceptLog bool
	// IO are the command's streams.
	IO IOStreams
	// AcceptHooks is --accept-hooks: allow configured shell hooks
	// without asking.
	AcceptHooks bool
	// HookConsent, when set, is the consent hooks are allowed by (asked
	// before the chat screen took the terminal: see AskHooksFirst).
	HookConsent *hooks.Consent

	// cfgOnce reads config.yaml once for Config.
	cfgOnce sync.Once
	cfg     config.Config
	cfgErr  error
}

// IOStreams are a command's standard streams: os.Stdin, os.Stdout and
// os.Stderr in the program, buffers in tests.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// New is a Factory on the process's standard streams.
func New() *Factory {
	return &Factory{IO: IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}}
}

// App is what a command works with: the store, the projections and the
// runner that feeds them, all under one $HERMES_HOME.
type App struct {
	// Home is the resolved $HERMES_HOME.
	Home string
	// Log is the Factory's logger.
	Log zerolog.Logger
	// Store is the event store.
	Store events.Store
	// Spec is the store's kind, which says where the projections are.
	Spec config.StoreSpec
	// ProjDB holds the table projections.
	ProjDB *projections.DB
	// Local is the home's projections.db when ProjDB is shared: it keeps
	// the origins of the projections kept in the home (the memory files).
	Local *projections.DB
	// Runner feeds the projections from the store.
	Runner *projections.Runner

	// errOut is where warnings for the user go (stderr).
	errOut io.Writer

	// locksMu guards lockSet (see locks).
	locksMu sync.Mutex
	lockSet map[string]*postgres.Locks
}

// ResolveHome is --home, else $HERMES_HOME, else ~/.hermes.
func (g *Factory) ResolveHome() (string, error) { return config.Home(g.HomeFlag) }

// Config is the home's config.yaml (see config.Load), read the first time
// a command asks for it.
func (g *Factory) Config() (config.Config, error) {
	g.cfgOnce.Do(func() {
		home, err := g.ResolveHome()
		if err != nil {
			g.cfgErr = err
			return
		}
		g.cfg, g.cfgErr = config.Load(home)
	})
	return g.cfg, g.cfgErr
}

// Setup makes the logger of --log-level, writing to IO.ErrOut.
func (g *Factory) Setup() error {
	lvl, err := config.LogLevel(g.LogLevel)
	if err != nil {
		return err
	}
	g.Log = zerolog.New(zerolog.ConsoleWriter{Out: g.errOut(), NoColor: true}).Level(lvl).With().Timestamp().Logger()
	return nil
}

// ReadOnlyHome reports whether home must be opened without writing: asked
// for with --read-only, or its directory or database files cannot be
// written by this process.
func (g *Factory) ReadOnlyHome(home string) bool {
	if g.ReadOnly || !sqlite.Writable(home) {
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

// OpenStore opens the event store of home: the one --store or config.yaml's
// store: names (see config.Store), and for the embedded store read-only
// when the home is.
func (g *Factory) OpenStore(home string) (events.Store, error) {
	spec, err := g.StoreSpec(home)
	if err != nil {
		return nil, err
	}
	if spec.Kind != config.StoreEmbedded {
		if g.ReadOnlyHome(home) {
			return nil, fmt.Errorf("--read-only (or a home that cannot be written) works with the embedded store only; the store is %s", spec)
		}
		return OpenSpec(context.Background(), spec, home, g.Log)
	}
	return g.OpenEmbedded(home)
}

// OpenEmbedded opens home's embedded store: read-only when the home is.
// A log the home remembers that is gone, replaced or shorter is an
// *events.LogLostError (see guard.go).
func (g *Factory) OpenEmbedded(home string) (*embedded.Store, error) {
	path := filepath.Join(home, "events.db")
	if g.ReadOnlyHome(home) {
		g.Log.Debug().Str("home", home).Msg("home is read-only: opening the event log read-only")
		return embedded.OpenReadOnly(path, g.EmbeddedOptions(home)...)
	}
	return embedded.Open(path, g.EmbeddedOptions(home)...)
}

// Open opens the store and projections of $HERMES_HOME. In a read-only home
// the projections are a private copy (see projections.OpenScratch) that
// read commands catch up from the log; commands that write fail. With a
// PostgreSQL store the table projections are in that database, shared by
// every home using it (see OpenProjections).
func (g *Factory) Open() (*App, error) {
	home, err := g.ResolveHome()
	if err != nil {
		return nil, err
	}
	ro := g.ReadOnlyHome(home)
	store, err := g.OpenStore(home)
	if err != nil {
		return nil, err
	}
	spec, err := g.StoreSpec(home)
	if err != nil {
		store.Close()
		return nil, err
	}
	a := &App{Home: home, Log: g.Log, Store: store, Spec: spec, errOut: g.errOut()}
	var pdb *projections.DB
	if ro {
		pdb, err = projections.OpenScratch(filepath.Join(home, "projections.db"))
	} else {
		pdb, err = a.OpenProjections(context.Background())
	}
	if err != nil {
		store.Close()
		return nil, err
	}
	a.ProjDB = pdb
	var origins projections.Origins = pdb
	if !ro && pdb.Shared() {
		// The memory files are this home's alone: their checkpoint, and the
		// log they were built from, are kept in the home, not where every
		// home would read them.
		if a.Local, err = projections.OpenDB(filepath.Join(home, "projections.db")); err != nil {
			pdb.Close()
			store.Close()
			return nil, err
		}
		origins = a.Local
	}
	projs := []projections.Projection{
		pdb.Projection(sessions.NewModel()),
		pdb.Projection(history.NewModel()),
		pdb.Projection(lineage.NewModel()),
		pdb.Projection(costs.NewModel()),
	}
	if !ro {
		local := pdb // the memory files' checkpoint is kept in the home, beside them
		if a.Local != nil {
			local = a.Local
		}
		mem := memory.NewFilesModel(filepath.Join(home, "memories"))
		mem.Log, mem.Store = g.Log, store
		projs = append(projs, local.Projection(mem))
		a.adoptMemories()
		sk := skills.NewFilesModel(skills.NewKeeper(store, filepath.Join(home, "skills")))
		sk.Log = g.Log
		projs = append(projs, local.Projection(sk))
		a.adoptSkills(sk.Keeper)
	}
	// A turn's steps come milliseconds apart with a fast model: gathering
	// them for 100 ms makes one projection write of a burst instead of one
	// per commit (issue 30; at 25 ms a 20-call turn still took a batch
	// every two or three calls, each a transaction per table projection),
	// while a person never sees the lag; a command that reads its own
	// write catches up first.
	a.Runner = projections.NewRunner(store, g.Log, projs...).WithQuarantine(pdb).WithOrigins(origins).WithLinger(projectionLinger)
	a.leaseProjections()
	return a, nil
}

// projectionLinger is how long the projections' runner gathers events
// before applying them (projections.Runner.WithLinger).
const projectionLinger = 100 * time.Millisecond

// adoptMemories takes into the log what the memory files hold and the log
// does not: a Python Hermes Agent's MEMORY.md and USER.md the first time
// this build sees them, and hand edits since (see adapters/tools/memory).
// A file it cannot adopt is left as it is, and named on stderr; the
// command goes on.
func (a *App) adoptMemories() {
	dir := filepath.Join(a.Home, "memories")
	n, err := memory.Adopt(context.Background(), a.Store, dir)
	if err != nil {
		fmt.Fprintf(a.errOut, "hermes: memories not adopted: %v\n", err)
	}
	if n > 0 {
		a.Log.Info().Int("entries", n).Str("dir", dir).Msg("adopted memory entries written outside hermes")
	}
}

// adoptSkills takes into the log the skill directories that hold what no
// event left there: a Python Hermes Agent's skills the first time this
// build sees them, and hand edits since (see adapters/tools/skills). A
// directory it cannot adopt is left as it is, and named on stderr; the
// command goes on.
func (a *App) adoptSkills(k *skills.Keeper) {
	vs, err := k.AdoptAll(context.Background())
	if err != nil {
		fmt.Fprintf(a.errOut, "hermes: skills not adopted: %v\n", err)
	}
	for _, v := range vs {
		a.Log.Info().Str("skill", v.Dir).Int("version", v.Number).Msg("adopted a skill written outside hermes")
	}
}

// OpenProjections opens the table projections that go with the app's
// store: with a PostgreSQL store, schema hermes_projections of its
// database, which every process using the store shares; else the home's
// projections.db.
func (a *App) OpenProjections(ctx context.Context) (*projections.DB, error) {
	if a.Spec.Kind == config.StorePostgres {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return projections.OpenPostgres(ctx, a.Spec.DSN)
	}
	return projections.OpenDB(filepath.Join(a.Home, "projections.db"))
}

// Damaged returns the damage that keeps session id (or a session whose id
// starts with it) out of the projections.
func (a *App) Damaged(ctx context.Context, id string) (projections.Damage, bool) {
	ds, err := a.Runner.Damaged(ctx)
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

// Close closes the store and the projections.
func (a *App) Close() error {
	err := errors.Join(a.closeLocks(), a.ProjDB.Close())
	if a.Local != nil {
		err = errors.Join(err, a.Local.Close())
	}
	return errors.Join(err, a.Store.Close())
}

// Fresh brings the projections up to the end of the log before a read, so
// that what a command shows includes every event appended so far.
func (a *App) Fresh(ctx context.Context) error {
	_, err := a.Runner.CatchUp(ctx)
	return err
}

// errOut is where diagnostics go: IO.ErrOut, else os.Stderr.
func (g *Factory) errOut() io.Writer {
	if g.IO.ErrOut != nil {
		return g.IO.ErrOut
	}
	return os.Stderr
}

// Blobs is the home's blob store: the bytes of the images events name,
// kept beside the log (see events/blobs).
func (a *App) Blobs() *blobs.Store { return blobs.Open(a.Home) }
