package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/session"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/apiserver"
	"github.com/hermes-go/hermes/adapters/gateway/apiserver/dashboard"
	"github.com/hermes-go/hermes/adapters/tools/skills"
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
		MediaDir: filepath.Join(env.home, "cache"),
		Sessions: apiSessions{c: env.chat}, Chats: apiserver.StoreChats{Store: a.Store}, Catalog: apiCatalog{c: env.chat}}
	if !env.set.dashboardOnly {
		// The jobs are the scheduler's own (it sees a change at once),
		// and a job run now runs in this gateway, as `hermes cron run`
		// runs it in its process.
		w := env.chat.cron()
		opts.Cron = &apiserver.Cron{Jobs: w.jobs, Rules: w.tool.Rules(), Timezone: w.set.Timezone}
		if env.cron != nil {
			opts.Cron.RunNow = env.cron.sched.RunNow
		}
	}
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

// apiSessions changes sessions for the API server's session routes, as
// the CLI's commands do: a new session's opening events, a title through
// the session's actor, an erasure of its stream under its lease.
type apiSessions struct{ c *chatter }

// Create starts session id of source api with the tools of the API's
// sessions.
func (x apiSessions) Create(ctx context.Context, id, model string) error {
	return x.c.startSession(ctx, id, apiserver.Platform, first(model, x.c.Cfg.Model), x.c.Tools)
}

// Retitle records the title through the session's actor (the stream's
// one writer).
func (x apiSessions) Retitle(ctx context.Context, id, title string) error {
	return x.c.Mgr.Retitle(ctx, id, title)
}

// Delete erases the session as `hermes sessions delete` does: its actor
// here stops (releasing its lease), the lease is taken so that no other
// process runs it meanwhile, and its stream is deleted.
func (x apiSessions) Delete(ctx context.Context, id string) error {
	x.c.Mgr.Restart(id)
	lease, err := x.c.App.Leases(session.ThisProcess()).Lease(id)
	if err != nil {
		return err
	}
	defer lease.Release()
	return x.c.App.Store.DeleteStream(ctx, events.SessionStream(id), events.Any)
}

// apiCatalog is the skills and tools of the API's sessions.
type apiCatalog struct{ c *chatter }

func (x apiCatalog) library() skills.Library { return app.Library(x.c.App.Home, x.c.WD) }

func (x apiCatalog) info(l skills.Library, s skills.Skill, offered map[string]bool) apiserver.SkillInfo {
	return apiserver.SkillInfo{Name: s.Name, Description: s.Description, Category: l.Category(s), Offered: offered[s.Name]}
}

func (x apiCatalog) offered(l skills.Library) map[string]bool {
	on, _ := l.Offered(x.c.skillWhere(apiserver.Platform, x.c.Tools))
	m := make(map[string]bool, len(on))
	for _, s := range on {
		m[s.Name] = true
	}
	return m
}

// Skills lists the home's skills (and the project's), each saying
// whether the API's sessions offer it.
func (x apiCatalog) Skills(context.Context) ([]apiserver.SkillInfo, error) {
	l := x.library()
	all, errs := l.All()
	for _, err := range errs {
		x.c.App.Log.Warn().Err(err).Msg("a skill that does not load is left out of /v1/skills")
	}
	offered := x.offered(l)
	out := make([]apiserver.SkillInfo, 0, len(all))
	for _, s := range all {
		out = append(out, x.info(l, s, offered))
	}
	return out, nil
}

// Skill is one skill with its instructions.
func (x apiCatalog) Skill(_ context.Context, name string) (apiserver.SkillDoc, error) {
	l := x.library()
	s, err := l.Get(name)
	if err != nil {
		return apiserver.SkillDoc{}, fmt.Errorf("%w: %v", apiserver.ErrNoSkill, err)
	}
	return apiserver.SkillDoc{SkillInfo: x.info(l, s, x.offered(l)), Content: s.Body}, nil
}

// Toolsets are the registry's toolsets with their tools; a toolset is
// enabled when the API's sessions have any of its tools.
func (x apiCatalog) Toolsets(context.Context) ([]apiserver.Toolset, error) {
	byName := map[string]*apiserver.Toolset{}
	var order []string
	if x.c.Reg == nil {
		return nil, nil
	}
	for _, e := range x.c.Reg.All() {
		t, ok := byName[e.Toolset]
		if !ok {
			t = &apiserver.Toolset{Name: e.Toolset, Label: e.Toolset, Configured: true, Tools: []string{}}
			byName[e.Toolset] = t
			order = append(order, e.Toolset)
		}
		name := e.Tool.Spec().Name
		t.Tools = append(t.Tools, name)
		if slices.Contains(x.c.Tools, name) {
			t.Enabled = true
		}
	}
	sort.Strings(order)
	out := make([]apiserver.Toolset, 0, len(order))
	for _, n := range order {
		t := byName[n]
		sort.Strings(t.Tools)
		t.Description = fmt.Sprintf("%d tools: %s", len(t.Tools), strings.Join(t.Tools, ", "))
		out = append(out, *t)
	}
	return out, nil
}
