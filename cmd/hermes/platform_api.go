package main

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/session"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/apiserver"
	"github.com/hermes-go/hermes/adapters/gateway/apiserver/dashboard"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/projections/costs"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/projections/lineage"
	"github.com/hermes-go/hermes/projections/search"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
	"github.com/rs/zerolog"
)

// apiPlatform builds the OpenAI-compatible API server when enabled.
func apiPlatform(env *gatewayEnv) (gw.Platform, error) {
	set := env.set.Platforms.APIServer
	if !set.Enabled {
		return nil, nil
	}
	a := env.chat.App
	arch := &apiArchive{a: a}
	opts := apiserver.Options{Host: set.Host, Port: set.Port, Key: set.Key, CORSOrigins: set.CORSOrigins,
		Model: env.chat.Cfg.Model, Archive: arch, Search: arch, Stopper: env.chat.Mgr, MaxTextBytes: gateway.MaxVerifiedTextBytes, Log: a.Log,
		Images: a.Blobs(), Responses: apiserver.StoreResponses{Store: a.Store}, MaxBodyBytes: set.MaxBodyBytes, MaxInFlight: set.MaxInFlight, ModelRoutes: apiRoutes(set, a.Log),
		MediaDir: filepath.Join(env.home, "cache")}
	if dashboardOn(set) {
		// The dashboard reads jobs through a Jobs of its own: it only reads.
		opts.Dashboard = &dashboard.Options{Store: a.Store, Blobs: a.Blobs(), Read: arch, Log: a.Log, Cron: cron.NewJobs(a.Store, nil),
			Caps: dashboard.Caps{PerSession: env.chat.Cfg.MaxCostPerSession, PerDay: env.chat.Cfg.MaxCostPerDay},
			Platforms: func() []gw.Status {
				p := env.served.Load()
				if p == nil {
					return nil
				}
				out := make([]gw.Status, 0, len(*p))
				for _, s := range *p {
					out = append(out, s.Status())
				}
				return out
			}}
	} else if set.Key == "" && set.Dashboard == nil {
		a.Log.Info().Msg("the web dashboard is off: it needs API_SERVER_KEY (or run `hermes dashboard`)")
	}
	srv, err := apiserver.New(opts)
	if err != nil {
		return nil, err
	}
	if env.set.onAPI != nil {
		env.set.onAPI(srv)
	}
	return srv, nil
}

// dashboardOn tells whether the API server serves the dashboard: as
// platforms.api_server.dashboard says, on by default when a key is set.
func dashboardOn(set config.APIServerConfig) bool {
	if set.Dashboard != nil {
		return *set.Dashboard
	}
	return set.Key != ""
}

// apiArchive is the API server's read side of the sessions. The chatter's
// projections are fed by its own runner in the background; a read opens
// the projections as another process would, catches them up to the end of
// the log (as the CLI's commands do) and closes them, so that what the
// API shows includes the turn that just answered.
type apiArchive struct{ a *app.App }

// read runs fn over the projections brought up to date.
func (x *apiArchive) read(ctx context.Context, fn func(db *projections.DB) error) error {
	db, err := x.a.OpenProjections(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	run := projections.NewRunner(x.a.Store, x.a.Log, db.Projection(sessions.NewModel()), db.Projection(history.NewModel()),
		db.Projection(lineage.NewModel()), db.Projection(costs.NewModel()))
	if _, err := run.CatchUp(ctx); err != nil {
		return err
	}
	return fn(db)
}

func (x *apiArchive) List(ctx context.Context, limit int) ([]sessions.Summary, error) {
	var out []sessions.Summary
	err := x.read(ctx, func(db *projections.DB) (err error) {
		out, err = sessions.List(ctx, db.Reader(), limit)
		return err
	})
	return out, err
}

func (x *apiArchive) Get(ctx context.Context, id string) (sessions.Summary, bool, error) {
	var s sessions.Summary
	var ok bool
	err := x.read(ctx, func(db *projections.DB) (err error) {
		s, ok, err = sessions.Get(ctx, db.Reader(), id)
		return err
	})
	return s, ok, err
}

// History is the history as the next model call starts from it (what
// `hermes sessions show --json` prints).
func (x *apiArchive) History(ctx context.Context, id string) ([]schema.Message, error) {
	var out []schema.Message
	err := x.read(ctx, func(db *projections.DB) error {
		msgs, err := history.Messages(ctx, db.Reader(), id)
		out = nextCall(msgs)
		return err
	})
	return out, err
}

func (x *apiArchive) Events(ctx context.Context, id string) ([]events.Recorded, error) {
	return x.a.Store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
}

func (x *apiArchive) Fork(ctx context.Context, id string, at uint64) (string, error) {
	return session.Fork(ctx, x.a.Store, id, at)
}

func (x *apiArchive) Exists(ctx context.Context, id string) (bool, error) {
	rs, err := x.a.Store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 1)
	return len(rs) > 0, err
}

// Lineage is the tree holding id (the dashboard's lineage page).
func (x *apiArchive) Lineage(ctx context.Context, id string) ([]lineage.Node, error) {
	var out []lineage.Node
	err := x.read(ctx, func(db *projections.DB) (err error) {
		out, err = lineage.Tree(ctx, db.Reader(), id)
		return err
	})
	return out, err
}

// Costs are the totals the dashboard's costs page charts.
func (x *apiArchive) Costs(ctx context.Context, by, since string) ([]costs.Row, error) {
	var out []costs.Row
	err := x.read(ctx, func(db *projections.DB) (err error) {
		out, err = costs.Totals(ctx, db.Reader(), by, since, knownPrices(x.a.Home).CallCost)
		return err
	})
	return out, err
}

func (x *apiArchive) Search(ctx context.Context, q search.Query) (search.Results, error) {
	var res search.Results
	err := x.a.SearchIndex(ctx, false, nil, func(idx *search.Index) error {
		var err error
		res, err = idx.Search(ctx, q)
		return err
	})
	return res, err
}

// apiRoutes is the API server's model allow-list: platforms.api_server's
// model_routes, alias → model. A route naming another provider, key or
// base URL is left out with a warning: a turn runs on the configured
// provider.
func apiRoutes(set config.APIServerConfig, log zerolog.Logger) map[string]string {
	routes := set.Routes()
	if len(routes) == 0 {
		return nil
	}
	out := make(map[string]string, len(routes))
	for name, r := range routes {
		switch {
		case strings.TrimSpace(r.Model) == "":
			log.Warn().Str("route", name).Msg("platforms.api_server.model_routes: a route without a model is left out")
		case r.Provider != "" || r.APIKey != "" || r.BaseURL != "":
			log.Warn().Str("route", name).Msg("platforms.api_server.model_routes: routes to another provider, key or base_url are not supported; this route is left out and its name runs the configured model")
		default:
			out[name] = r.Model
		}
	}
	return out
}
