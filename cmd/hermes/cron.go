package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/grants"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/bus"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/schema"
)

// cronWiring is what a chatter needs to run jobs.
type cronWiring struct {
	set   config.CronSettings
	jobs  *cron.Jobs
	tool  *app.CronTool
	allow *grants.List
}

func (c *chatter) cron() *cronWiring { return c.cronw }

// wireCron prepares the chatter to run jobs: the cronjob tool's settings,
// and a scheduler for its run action (not firing anything by itself: the
// gateway and `hermes cron daemon` run one that does).
func (c *chatter) wireCron(fileCfg config.Config, cj *app.CronTool) error {
	set, err := config.Cron(fileCfg.Cron)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(c.App.Home, "config.yaml"), err)
	}
	w := &cronWiring{set: set, allow: cj.Allow}
	w.tool = cj
	w.tool.AllowNested = set.AllowNested
	w.jobs = w.tool.Jobs
	c.cronw = w
	w.tool.SetRunner(c.scheduler(nil, nil))
	return nil
}

// scheduler returns a scheduler of the home's jobs that delivers to
// platforms through pub (nil: it cannot), up names the platforms pub
// reaches (nil: unknown).
func (c *chatter) scheduler(pub cron.Publisher, up func() []string) *cron.Scheduler {
	w := c.cron()
	o := session.ThisProcess()
	// A scheduled run is nobody's conversation: no background review
	// learns from it (upstream's cron runs skip memory too).
	deps := c.Deps
	deps.Review = nil
	cfg := cron.Config{
		Agent: &cron.SessionAgent{Sys: c.Sys, Deps: deps, Tools: c.cronTools,
			Create: c.createCronSession},
		Scripts: curatorScripts{app: c.App, Scripts: terminal.JobShell{Approver: &terminal.Approver{Allow: w.allow}, Backend: c.Cfg.Backend, Dir: filepath.Join(c.App.Home, "scripts"), Timeout: w.set.ScriptTimeout,
			Sandboxes: app.CronSandboxes(c.App.Home, c.Cfg, c.App.Log)}},
		Leases:        c.App.Leases(o),
		Owner:         schema.RunOwner{Host: o.Host, PID: o.PID, Nonce: o.Nonce},
		MaxConcurrent: w.set.MaxParallel, Timeout: w.set.Timeout, AckTimeout: w.set.AckTimeout,
		DeliveryAttempts: w.set.DeliveryAttempts, HandOver: w.set.HandOver,
		OutputDir: filepath.Join(c.App.Home, "cron", "output"), Retention: w.set.Retention, Wrap: w.set.Wrap,
		Bus: pub, Platforms: up, Log: c.App.Log,
		// A target naming a platform alone is its home channel (/sethome).
		Home: func(ctx context.Context, platform string) (string, string, bool, error) {
			h, ok, err := gateway.Home(ctx, c.App.Store, platform)
			return h.Chat, h.Thread, ok, err
		},
	}
	return cron.New(c.App.Store, w.jobs, c.Sys, cfg)
}

// createCronSession writes the opening events of a run's session: source
// cron, the job's model, a stable prefix naming the run's tools.
func (c *chatter) createCronSession(ctx context.Context, id string, job *cron.Job) error {
	tb, _ := c.cronTools(job)
	return c.startSession(ctx, id, "cron", first(job.Spec.Model, c.Cfg.Model), tb.Names())
}

// cronTools is the toolbox of a job's runs: the configured tools narrowed
// to the job's toolsets, without cronjob unless cron.allow_nested; and
// the same narrowing for its subagents.
func (c *chatter) cronTools(job *cron.Job) (tool.Toolbox, func([]string, bool) tool.Toolbox) {
	sel := c.Cfg.Tools
	if !c.cron().set.AllowNested {
		sel.DisabledToolsets = append(slices.Clone(sel.DisabledToolsets), "cronjob")
	}
	restrict := app.Restrictor(c.Reg, sel)
	return restrict(job.Spec.Toolsets, true), restrict
}

// gatewayCron is the scheduler inside `hermes gateway run`: it delivers
// through the gateway's bus, and the router hands it the outcomes.
type gatewayCron struct {
	c     *chatter
	sched *cron.Scheduler
	mu    sync.Mutex
	up    []string
}

func (c *chatter) gatewayCron(b *bus.Bus) *gatewayCron {
	g := &gatewayCron{c: c}
	g.sched = c.scheduler(bus.OutboundPublisher{Bus: b}, func() []string {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.up
	})
	c.cron().tool.SetRunner(g.sched)
	return g
}

// Ack is the router's hook for cron delivery outcomes.
func (g *gatewayCron) Ack(in schema.Inbound) error { return g.sched.Ack(in) }

// start runs the scheduler for the platforms up until the returned
// function is called.
func (g *gatewayCron) start(up []string) func() {
	g.mu.Lock()
	g.up = up
	g.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := g.sched.Run(ctx); err != nil {
			g.c.App.Log.Error().Err(err).Msg("cron scheduler")
		}
	}()
	return func() { cancel(); <-done }
}

// cronHome is a home's jobs for the commands that only read or change
// them (no model needed).
type cronHome struct {
	a     *app.App
	jobs  *cron.Jobs
	rules cron.Rules
	set   config.CronSettings
}

func openCronHome(g *app.Factory) (*cronHome, error) {
	a, err := g.Open()
	if err != nil {
		return nil, err
	}
	fileCfg, err := config.Load(a.Home)
	if err != nil {
		a.Close()
		return nil, err
	}
	set, err := config.Cron(fileCfg.Cron)
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("%s: %w", filepath.Join(a.Home, "config.yaml"), err)
	}
	wd, _ := os.Getwd()
	cj := app.NewCronTool()
	if _, _, err := app.Registry(a.Home, wd, nil, config.Resolved{TerminalTimeout: 3 * time.Minute, Web: fileCfg.Web}, nil, nil, cj, nil, g.Log); err != nil {
		a.Close()
		return nil, err
	}
	rules := cj.Rules()
	rules.Allowed = grants.New(a.Store, fileCfg.CommandAllowlist, g.Log).Has
	return &cronHome{a: a, jobs: cron.NewJobs(a.Store, nil), set: set, rules: rules}, nil
}

func cronCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "cron", Short: "Scheduled jobs: list, add, edit, pause, resume, remove, run, history, daemon"}
	cmd.AddCommand(cronListCmd(g), cronAddCmd(g), cronEditCmd(g), cronPauseCmd(g), cronResumeCmd(g), cronRemoveCmd(g), cronRunCmd(g), cronHistoryCmd(g), cronDaemonCmd(g))
	return cmd
}

// onJob resolves ref and applies change, printing the job after it.
func onJob(ctx context.Context, g *app.Factory, out io.Writer, ref string, change func(*cronHome, *cron.Job) (*cron.Job, error)) error {
	h, err := openCronHome(g)
	if err != nil {
		return err
	}
	defer h.a.Close()
	j, err := h.jobs.Find(ctx, ref)
	if err != nil {
		return err
	}
	j, err = change(h, j)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "job %s (%s): %s, %s, next run %s\n", j.ID, j.Spec.Name, scheduleText(j), j.State(), nextText(j))
	return nil
}
