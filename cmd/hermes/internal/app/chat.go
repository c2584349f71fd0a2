package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/compress"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/model/catalog"
	"github.com/hermes-go/hermes/actors/review"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/actors/toolrun"
	"github.com/hermes-go/hermes/adapters/hooks"
	"github.com/hermes-go/hermes/adapters/llm"
	"github.com/hermes-go/hermes/adapters/plugins"
	"github.com/hermes-go/hermes/adapters/tools"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/projections/costs"
	"github.com/hermes-go/hermes/projections/search"
)

// Chat is a wired chat: one actor system and the sessions it runs.
type Chat struct {
	// App is the home the chat runs in.
	App *App
	// Hooks are the chat's hooks (session finalize and reset run from
	// the chat's commands).
	Hooks *hooks.Runner
	// Plugins are the chat's plugins (/plugins shows them).
	Plugins *plugins.Host
	// Cfg is the configuration in effect; File is config.yaml as read.
	Cfg  config.Resolved
	File config.Config
	// Mgr runs the sessions, in Sys.
	Mgr *session.Manager
	Sys *actor.ActorSystem
	// WD is the working directory; Tools the names of the tools on.
	WD    string
	Tools []string
	// Reg and Deps are what scheduled runs narrow (cmd/hermes/cron.go);
	// CronTool is the cronjob tool, to be given its scheduler.
	Reg      *tools.Registry
	Deps     session.Deps
	CronTool *CronTool
	// Reviews runs the background reviews (nil: off).
	Reviews *review.Reviewer
	notes   *reviewNotes
	stop    func()
}

// ChatOption adjusts a chat's session dependencies before its manager
// starts; provider is the configured provider chain.
type ChatOption func(d *session.Deps, provider model.Provider, cfg config.Resolved)

// NewChat wires a chat on g's home: the configuration with ov over it,
// the provider ladder, the tools, an actor system and the session
// manager, and the projections following the log until Stop. asker
// answers the tools' questions (nil: none can be asked).
func NewChat(g *Factory, ov config.Overrides, asker tool.Asker, opts ...ChatOption) (*Chat, error) {
	a, err := g.Open()
	if err != nil {
		return nil, err
	}
	fileCfg, err := config.Load(a.Home)
	if err != nil {
		a.Close()
		return nil, err
	}
	if w := fileCfg.IgnoredWarning(filepath.Join(a.Home, "config.yaml")); w != "" {
		fmt.Fprintln(g.errOut(), "hermes: "+w)
	}
	cfg, err := config.Resolve(a.Home, fileCfg, ov)
	if err != nil {
		a.Close()
		return nil, err
	}
	if cfg.LLM.APIKey == "" && llm.NeedsKey(cfg.LLM) {
		a.Close()
		where, vars := "the provider's API", cfg.LLM.KeyEnv
		if cfg.LLM.Provider != "" {
			where = cfg.LLM.Provider
		}
		if p, ok := catalog.Lookup(cfg.LLM.Provider); ok && len(p.KeyEnv) > 1 {
			vars = p.KeyVars()
		}
		return nil, fmt.Errorf("no API key for %s: set %s (or put it in %s, or run hermes setup); a local server needs no key: point --base-url or OPENAI_BASE_URL at it",
			where, vars, filepath.Join(a.Home, ".env"))
	}
	// A provider a plugin serves is found once the plugins are started
	// (below).
	var host *plugins.Host
	provider, err := LadderWith(cfg, func() *plugins.Host { return host })
	if err != nil {
		a.Close()
		return nil, err
	}
	wd, _ := os.Getwd()
	searcher := func(ctx context.Context, q search.Query) (search.Results, error) {
		var res search.Results
		err := a.SearchIndex(ctx, false, nil, func(idx *search.Index) error {
			var err error
			res, err = idx.Search(ctx, q)
			return err
		})
		return res, err
	}
	cj := NewCronTool()
	hk, err := Hooks(g, a.Home, wd, cfg)
	if err != nil {
		a.Close()
		return nil, err
	}
	host, err = StartPlugins(context.Background(), a.Home, wd, a.Store, cfg, hk, "", g.Log)
	if err != nil {
		a.Close()
		return nil, err
	}
	reg, ex, err := Registry(a.Home, wd, a.Store, cfg, searcher, Summarizer(provider, cfg), cj, hk, g.Log)
	if err == nil {
		err = AddPlugins(reg, host, cfg, hk)
	}
	if err != nil {
		host.Close()
		a.Close()
		return nil, err
	}
	tools := reg.Select(cfg.Tools)
	ex.Toolbox = tools
	sys := actors.NewSystem(g.Log)
	pool := toolrun.NewPool(sys, cfg.MaxParallel, cfg.ToolTimeout)
	pool.Log = g.Log
	deps := session.Deps{
		Store: a.Store, Log: g.Log, Provider: provider, Tools: tools, Asker: asker, Yolo: cfg.Yolo, SkillNudgeAfter: 5,
		Exec: pool,
		Cfg: agent.Config{Model: cfg.Model, BudgetWarningAt: cfg.BudgetWarningAt, MaxParallelTools: cfg.MaxParallel, MaxTokens: cfg.MaxTokens,
			Prices: cfg.Prices, MaxDelegatesPerResponse: cfg.MaxDelegates},
		MaxDepth:          cfg.MaxDepth,
		IdleAfter:         cfg.IdleAfter,
		MaxConcurrent:     cfg.MaxConcurrent,
		Restrict:          Restrictor(reg, cfg.Tools),
		MaxTurns:          cfg.MaxTurns,
		Compression:       cfg.Compression,
		Windows:           &compress.Windows{Path: filepath.Join(a.Home, "context_limits.json"), Override: cfg.ContextWindow},
		FlushMemory:       true,
		MaxCostPerSession: cfg.MaxCostPerSession,
		MaxCostPerDay:     cfg.MaxCostPerDay,
		// One process at a time runs a session: a chat holds the lease of
		// its session until it ends or moves to another one.
		Leases: a.Leases(session.ThisProcess()),
		// What the model writes is redacted as its tools' output is
		// (registry): the log, search, export and the API serve it.
		Redact: Secrets(cfg).Redact,
		DayCost: func() float64 {
			d, _ := costs.Day(context.Background(), a.ProjDB.Reader(), time.Now().UTC().Format("2006-01-02"))
			return d
		},
	}
	deps.Hooks = TurnHooks(hk)
	blobs := a.Blobs()
	deps.Blobs, deps.Sees = blobs, Sees(cfg)
	if deps.Describe, err = Describer(cfg, blobs); err != nil {
		a.Close()
		return nil, err
	}
	if cfg.AuxModel != "" {
		aux, err := llm.New(cfg.Aux)
		if err != nil {
			a.Close()
			return nil, fmt.Errorf("auxiliary.compression: %w", err)
		}
		deps.AuxProvider, deps.AuxModel = aux, cfg.AuxModel
	}
	notes := &reviewNotes{}
	rv, err := Reviewer(deps, provider, cfg, tools, notes.notify)
	if err != nil {
		a.Close()
		return nil, err
	}
	startReviews(context.Background(), &deps, rv, cfg)
	for _, o := range opts {
		o(&deps, provider, cfg)
	}
	deps.Asker = hk.Asker(deps.Asker)
	mgr := session.NewManager(sys, deps)
	StopOnLost(deps.Leases, mgr)
	c := &Chat{App: a, Cfg: cfg, File: fileCfg, Mgr: mgr, WD: wd, Tools: tools.Names(), Sys: sys, Reg: reg, Deps: deps, CronTool: cj, Hooks: hk, Plugins: host,
		Reviews: rv, notes: notes}
	// The projections follow the log while the chat runs: cost caps and
	// other processes read them.
	rctx, stopRunner := context.WithCancel(context.Background())
	runnerDone := make(chan struct{})
	go func() {
		defer close(runnerDone)
		if err := a.Runner.Run(rctx); err != nil && rctx.Err() == nil {
			g.Log.Warn().Err(err).Msg("projections stopped")
		}
	}()
	c.stop = func() {
		if rv != nil {
			// A review in flight may finish (within its timeout); one
			// that does not is recorded as abandoned.
			rv.Close(cfg.Review.Timeout)
		}
		mgr.Shutdown()
		sys.Shutdown()
		reg.Close() // background processes end with Hermes
		host.Close()
		stopRunner()
		<-runnerDone
		a.Close()
	}
	return c, nil
}

// Stop ends the chat: its sessions, the actor system, the tools'
// background processes, the projections' runner, and the home.
func (c *Chat) Stop() { c.stop() }
