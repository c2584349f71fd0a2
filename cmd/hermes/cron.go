package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/grants"
	"github.com/hermes-go/hermes/actors/judge"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/bus"
	"github.com/hermes-go/hermes/adapters/tools/cronjob"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// cronSettings is the cron: section after defaults and the environment.
type cronSettings struct {
	maxParallel, retention int
	wrap, allowNested      bool
	timeout, scriptTimeout time.Duration
	ackTimeout             time.Duration
	timezone               string
}

func resolveCron(c config.CronConfig) (cronSettings, error) {
	s := cronSettings{maxParallel: c.MaxParallelJobs, retention: cron.DefaultRetention, wrap: c.WrapResponse == nil || *c.WrapResponse,
		allowNested: c.AllowNested, timeout: cron.DefaultTimeout, ackTimeout: cron.DefaultAckTimeout, timezone: c.Timezone}
	if c.MaxParallelJobs < 0 {
		return s, fmt.Errorf("cron.max_parallel_jobs must not be negative, got %d", c.MaxParallelJobs)
	}
	if c.OutputRetention != nil {
		s.retention = *c.OutputRetention
		if s.retention <= 0 {
			s.retention = -1 // keep all
		}
	}
	if c.ScriptTimeoutSeconds < 0 {
		return s, fmt.Errorf("cron.script_timeout_seconds must not be negative, got %d", c.ScriptTimeoutSeconds)
	}
	s.scriptTimeout = time.Duration(c.ScriptTimeoutSeconds) * time.Second
	if c.Timeout != "" {
		d, err := time.ParseDuration(c.Timeout)
		if err != nil || d <= 0 {
			return s, fmt.Errorf("cron.timeout %q: use a duration such as 10m", c.Timeout)
		}
		s.timeout = d
	}
	if v := os.Getenv("HERMES_CRON_TIMEOUT"); v != "" {
		secs, err := strconv.ParseFloat(v, 64)
		if err != nil || secs <= 0 {
			return s, fmt.Errorf("HERMES_CRON_TIMEOUT %q: give seconds, such as 600", v)
		}
		s.timeout = time.Duration(secs * float64(time.Second))
	}
	if c.DeliveryTimeout != "" {
		d, err := time.ParseDuration(c.DeliveryTimeout)
		if err != nil || d <= 0 {
			return s, fmt.Errorf("cron.delivery_timeout %q: use a duration such as 2m", c.DeliveryTimeout)
		}
		s.ackTimeout = d
	}
	if c.Timezone != "" {
		if _, err := time.LoadLocation(c.Timezone); err != nil {
			return s, fmt.Errorf("cron.timezone %q: use an IANA name such as Europe/Berlin", c.Timezone)
		}
	}
	return s, nil
}

// cronTool is the cronjob tool with what its registry knows: the
// toolsets a job may name (web counts even when it has no tools for lack
// of a search_url). Its caller keeps it (registry wraps what it
// registers) to give it the scheduler.
type cronTool struct {
	*cronjob.Tool
	Toolsets []string
	allow    *grants.List
}

func newCronTool() *cronTool { return &cronTool{Tool: &cronjob.Tool{}} }

// bind gives the tool its store (nil when the registry is only listed)
// and the allow-list (grants and command_allowlist) its scripts are
// checked against.
func (t *cronTool) bind(store events.Store, allow *grants.List) {
	t.Store, t.Toolsets, t.allow = store, nil, allow
	t.Rules = func() cron.Rules {
		return cron.Rules{Toolsets: t.Toolsets, Allowed: allow.Has, Judge: judge.Check}
	}
	if store != nil && t.Jobs == nil {
		t.Jobs = cron.NewJobs(store, nil)
		t.Origin = func(ctx context.Context, id string) (*schema.JobOrigin, error) {
			return gateway.OriginOf(ctx, store, id)
		}
	}
}

// cronWiring is what a chatter needs to run jobs.
type cronWiring struct {
	set   cronSettings
	jobs  *cron.Jobs
	tool  *cronTool
	allow *grants.List
}

func (c *chatter) cron() *cronWiring { return c.cronw }

// wireCron prepares the chatter to run jobs: the cronjob tool's settings,
// and a scheduler for its run action (not firing anything by itself: the
// gateway and `hermes cron daemon` run one that does).
func (c *chatter) wireCron(fileCfg config.Config, cj *cronTool) error {
	set, err := resolveCron(fileCfg.Cron)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(c.a.Home, "config.yaml"), err)
	}
	w := &cronWiring{set: set, allow: cj.allow}
	w.tool = cj
	w.tool.AllowNested = set.allowNested
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
	cfg := cron.Config{
		Agent: &cron.SessionAgent{Sys: c.sys, Deps: c.deps, Tools: c.cronTools,
			Create: c.createCronSession},
		Scripts: terminal.JobShell{Approver: &terminal.Approver{Allow: w.allow}, Backend: c.cfg.Backend, Dir: filepath.Join(c.a.Home, "scripts"), Timeout: w.set.scriptTimeout,
			Sandboxes: app.CronSandboxes(c.a.Home, c.cfg, c.a.Log)},
		Leases:        c.a.Leases(o),
		Owner:         schema.RunOwner{Host: o.Host, PID: o.PID, Nonce: o.Nonce},
		MaxConcurrent: w.set.maxParallel, Timeout: w.set.timeout, AckTimeout: w.set.ackTimeout,
		OutputDir: filepath.Join(c.a.Home, "cron", "output"), Retention: w.set.retention, Wrap: w.set.wrap,
		Bus: pub, Platforms: up, Log: c.a.Log,
	}
	return cron.New(c.a.Store, w.jobs, c.sys, cfg)
}

// createCronSession writes the opening events of a run's session: source
// cron, the job's model, a stable prefix naming the run's tools.
func (c *chatter) createCronSession(ctx context.Context, id string, job *cron.Job) error {
	tb, _ := c.cronTools(job)
	return c.startSession(ctx, id, "cron", first(job.Spec.Model, c.cfg.Model), tb.Names())
}

// cronTools is the toolbox of a job's runs: the configured tools narrowed
// to the job's toolsets, without cronjob unless cron.allow_nested; and
// the same narrowing for its subagents.
func (c *chatter) cronTools(job *cron.Job) (tool.Toolbox, func([]string, bool) tool.Toolbox) {
	sel := c.cfg.Tools
	if !c.cron().set.allowNested {
		sel.DisabledToolsets = append(slices.Clone(sel.DisabledToolsets), "cronjob")
	}
	restrict := app.Restrictor(c.reg, sel)
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
			g.c.a.Log.Error().Err(err).Msg("cron scheduler")
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
	set   cronSettings
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
	set, err := resolveCron(fileCfg.Cron)
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("%s: %w", filepath.Join(a.Home, "config.yaml"), err)
	}
	wd, _ := os.Getwd()
	cj := newCronTool()
	if _, _, err := registry(a.Home, wd, nil, config.Resolved{TerminalTimeout: 3 * time.Minute, Web: fileCfg.Web}, nil, nil, cj, g.Log); err != nil {
		a.Close()
		return nil, err
	}
	rules := cj.Rules()
	rules.Allowed = grants.New(a.Store, fileCfg.CommandAllowlist, g.Log).Has
	return &cronHome{a: a, jobs: cron.NewJobs(a.Store, nil), set: set, rules: rules}, nil
}

// jobFlags are the flags of `hermes cron add` and `edit`.
type jobFlags struct {
	schedule, tz, prompt, promptFile, script, name, deliver, model, catchUp, onCrash, timeout string
	toolsets                                                                                  []string
	noAgent, paused                                                                           bool
	maxCost                                                                                   float64
}

func (f *jobFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.schedule, "schedule", "", `when: "0 9 * * 1-5" (cron), "every 30m", "in 2h", or a time such as 2026-06-01T09:00`)
	fl.StringVar(&f.tz, "tz", "", "time zone of the schedule, such as Europe/Berlin (default cron.timezone, else the machine's)")
	fl.StringVar(&f.prompt, "prompt", "", "what each run asks the agent (self-contained: nobody is there to answer questions)")
	fl.StringVar(&f.promptFile, "prompt-file", "", "read the prompt from this file (- for stdin)")
	fl.StringVar(&f.script, "script", "", "a shell command run first; its output goes to the model with the prompt")
	fl.BoolVar(&f.noAgent, "no-agent", false, "deliver the script's output as it is, without the model")
	fl.StringVar(&f.name, "name", "", "a short name (default: the start of the prompt)")
	fl.StringVar(&f.deliver, "deliver", "", "where answers go: local (a file, the default), none, PLATFORM:CHAT[:THREAD] such as telegram:111111; comma-separated")
	fl.StringSliceVar(&f.toolsets, "toolsets", nil, "restrict the runs to these toolsets (comma-separated)")
	fl.StringVar(&f.model, "model", "", "model of the runs (default: the configured one)")
	fl.StringVar(&f.catchUp, "catch-up", "", "after downtime: skip, once (default) or all missed runs")
	fl.StringVar(&f.onCrash, "on-crash", "", "a run a crash cut short: retry (once, default) or fail")
	fl.StringVar(&f.timeout, "timeout", "", "how long a run may take, such as 10m (default cron.timeout)")
	fl.Float64Var(&f.maxCost, "max-cost", 0, "cost cap of one run in US dollars")
}

// apply sets the flags given on cmd into s.
func (f *jobFlags) apply(cmd *cobra.Command, s *schema.JobSpec) error {
	ch := cmd.Flags().Changed
	if f.promptFile != "" {
		var data []byte
		var err error
		if f.promptFile == "-" {
			data, err = io.ReadAll(cmd.InOrStdin())
		} else {
			data, err = os.ReadFile(f.promptFile)
		}
		if err != nil {
			return fmt.Errorf("--prompt-file: %w", err)
		}
		f.prompt = string(data)
		ch = func(name string) bool { return name == "prompt" || cmd.Flags().Changed(name) }
	}
	set := map[string]*string{"schedule": &s.Schedule, "tz": &s.Timezone, "prompt": &s.Prompt, "script": &s.Script, "name": &s.Name,
		"deliver": &s.Deliver, "model": &s.Model, "catch-up": &s.CatchUp, "on-crash": &s.OnCrash}
	from := map[string]string{"schedule": f.schedule, "tz": f.tz, "prompt": f.prompt, "script": f.script, "name": f.name,
		"deliver": f.deliver, "model": f.model, "catch-up": f.catchUp, "on-crash": f.onCrash}
	for k, dst := range set {
		if ch(k) {
			*dst = from[k]
		}
	}
	if ch("no-agent") {
		s.NoAgent = f.noAgent
	}
	if ch("toolsets") {
		s.Toolsets = f.toolsets
	}
	if ch("max-cost") {
		s.MaxCostUSD = f.maxCost
	}
	if ch("timeout") {
		d, err := time.ParseDuration(f.timeout)
		if err != nil || d < time.Second {
			return fmt.Errorf("--timeout %q: use a duration such as 10m", f.timeout)
		}
		s.TimeoutSeconds = int(d / time.Second)
	}
	return nil
}

func cronCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "cron", Short: "Scheduled jobs: list, add, edit, pause, resume, remove, run, history, daemon"}
	var listAll, listJSON bool
	list := &cobra.Command{Use: "list", Short: "The jobs, when each runs next and how it last ran", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := openCronHome(g)
			if err != nil {
				return err
			}
			defer h.a.Close()
			all, err := h.jobs.Load(cmd.Context())
			if err != nil {
				return err
			}
			var shown []*cron.Job
			for _, j := range all {
				if !j.Removed || listAll {
					shown = append(shown, j)
				}
			}
			if listJSON {
				return writeJSON(cmd.OutOrStdout(), jobsJSON(shown))
			}
			if len(shown) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no scheduled jobs yet: add one with `hermes cron add --schedule \"0 9 * * 1-5\" --prompt \"…\"`")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tSCHEDULE\tNEXT\tLAST\tDELIVER\tSTATE")
			for _, j := range shown {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, clip(j.Spec.Name, 30), scheduleText(j), nextText(j), lastText(j), j.Spec.Deliver, j.State())
			}
			return tw.Flush()
		}}
	list.Flags().BoolVar(&listAll, "all", false, "include removed jobs")
	list.Flags().BoolVar(&listJSON, "json", false, "JSON output")

	add := &jobFlags{}
	addCmd := &cobra.Command{Use: "add", Short: "Add a job", Args: cobra.NoArgs,
		Example: `  hermes cron add --schedule "0 9 * * 1-5" --tz Europe/Berlin --deliver telegram:111111 --prompt "Summarise my inbox"`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := openCronHome(g)
			if err != nil {
				return err
			}
			defer h.a.Close()
			var spec schema.JobSpec
			if err := add.apply(cmd, &spec); err != nil {
				return err
			}
			if spec.Timezone == "" && !strings.HasPrefix(spec.Schedule, "CRON_TZ=") && !strings.HasPrefix(spec.Schedule, "TZ=") {
				spec.Timezone = h.set.timezone
			}
			spec, err = cron.Normalize(spec, h.jobs.Now(), h.rules)
			if err != nil {
				return err
			}
			j, err := h.jobs.Create(cmd.Context(), spec, !add.paused, "cli")
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "job %s (%s): %s, next run %s, delivered to %s\n", j.ID, j.Spec.Name, scheduleText(j), nextText(j), j.Spec.Deliver)
			return nil
		}}
	add.register(addCmd)
	addCmd.Flags().BoolVar(&add.paused, "paused", false, "create the job paused")

	edit := &jobFlags{}
	editCmd := &cobra.Command{Use: "edit ID", Short: "Change a job (only the flags given)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return onJob(g, cmd, args[0], func(h *cronHome, j *cron.Job) (*cron.Job, error) {
				j, err := h.jobs.Update(cmd.Context(), j.ID, h.rules, func(s *schema.JobSpec) error { return edit.apply(cmd, s) })
				if errors.Is(err, cron.ErrNothing) {
					return nil, errors.New("nothing to change: give the flags to change, such as --schedule or --prompt")
				}
				return j, err
			})
		}}
	edit.register(editCmd)

	var reason string
	pause := &cobra.Command{Use: "pause ID", Short: "Stop a job from firing until it is resumed", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return onJob(g, cmd, args[0], func(h *cronHome, j *cron.Job) (*cron.Job, error) { return h.jobs.Pause(cmd.Context(), j.ID, reason) })
		}}
	pause.Flags().StringVar(&reason, "reason", "", "why (shown in the history)")
	resume := &cobra.Command{Use: "resume ID", Short: "Let a paused job fire again from its next slot", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return onJob(g, cmd, args[0], func(h *cronHome, j *cron.Job) (*cron.Job, error) { return h.jobs.Resume(cmd.Context(), j.ID) })
		}}
	remove := &cobra.Command{Use: "remove ID", Short: "Remove a job (its history stays)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return onJob(g, cmd, args[0], func(h *cronHome, j *cron.Job) (*cron.Job, error) { return h.jobs.Remove(cmd.Context(), j.ID, reason) })
		}}
	remove.Flags().StringVar(&reason, "reason", "", "why (shown in the history)")

	var histJSON bool
	history := &cobra.Command{Use: "history ID", Short: "A job's changes, runs (how each ended, where it was delivered) and missed slots", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := openCronHome(g)
			if err != nil {
				return err
			}
			defer h.a.Close()
			j, err := h.jobs.Find(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			rs, err := h.jobs.Events(cmd.Context(), j.ID)
			if err != nil {
				return err
			}
			entries, err := cron.History(rs)
			if err != nil {
				return err
			}
			if histJSON {
				return writeJSON(cmd.OutOrStdout(), entries)
			}
			return printHistory(cmd.OutOrStdout(), j, entries)
		}}
	history.Flags().BoolVar(&histJSON, "json", false, "JSON output")

	var ov config.Overrides
	runCmd := &cobra.Command{Use: "run ID", Short: "Run a job now, in this process (its answer is delivered as usual)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newChatter(g, ov, nil)
			if err != nil {
				return err
			}
			defer c.stop()
			ctx, done := interruptible(cmd.Context())
			defer done()
			run, err := c.scheduler(nil, nil).RunNow(ctx, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "run %s: %s", run.ID, run.Status)
			if run.CostUSD > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), ", $%.4f", run.CostUSD)
			}
			if run.SessionID != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), ", session %s", run.SessionID)
			}
			fmt.Fprintln(cmd.ErrOrStderr())
			if d := run.Deliveries(); d != "" && d != "-" {
				fmt.Fprintln(cmd.ErrOrStderr(), "delivered:", d)
			}
			if run.Error != "" {
				return &exitError{code: 1, err: fmt.Errorf("the run %s: %s", run.Status, run.Error)}
			}
			return nil
		}}
	daemon := &cobra.Command{Use: "daemon", Short: "Run the scheduler in the foreground without a gateway (Ctrl-C or SIGTERM stops it)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runCronDaemon(ctx, cmd, g, ov)
		}}
	for _, c := range []*cobra.Command{runCmd, daemon} {
		c.Flags().StringVar(&ov.Model, "model", "", "model name")
		c.Flags().StringVar(&ov.Provider, "provider", "", "provider name")
		c.Flags().StringVar(&ov.BaseURL, "base-url", "", "API base URL")
		c.Flags().StringVar(&ov.APIMode, "api-mode", "", "chat_completions, anthropic_messages or codex_responses")
	}
	cmd.AddCommand(list, addCmd, editCmd, pause, resume, remove, runCmd, history, daemon)
	return cmd
}

// onJob resolves ref and applies change, printing the job after it.
func onJob(g *app.Factory, cmd *cobra.Command, ref string, change func(*cronHome, *cron.Job) (*cron.Job, error)) error {
	h, err := openCronHome(g)
	if err != nil {
		return err
	}
	defer h.a.Close()
	j, err := h.jobs.Find(cmd.Context(), ref)
	if err != nil {
		return err
	}
	j, err = change(h, j)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "job %s (%s): %s, %s, next run %s\n", j.ID, j.Spec.Name, scheduleText(j), j.State(), nextText(j))
	return nil
}

// runCronDaemon runs the scheduler without a gateway. With gateway.bus
// set to NATS it delivers through the gateway of that bus; otherwise
// platform targets are recorded as failed, saying why.
func runCronDaemon(ctx context.Context, cmd *cobra.Command, g *app.Factory, ov config.Overrides) error {
	c, err := newChatter(g, ov, nil)
	if err != nil {
		return err
	}
	defer c.stop()
	fileCfg, err := config.Load(c.a.Home)
	if err != nil {
		return err
	}
	gset, err := resolveGateway(fileCfg)
	if err != nil {
		return err
	}
	var pub cron.Publisher
	via := "platform targets need `hermes gateway run` (or gateway.bus: nats://…)"
	if strings.HasPrefix(gset.Bus, "nats://") {
		b, err := bus.Open(gset.Bus, g.Log)
		if err != nil {
			return err
		}
		defer b.Close()
		pub, via = bus.OutboundPublisher{Bus: b}, "platform targets through "+gset.Bus
	}
	s := c.scheduler(pub, nil)
	c.cron().tool.SetRunner(s)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case <-s.Ready():
	case err := <-done:
		return err
	}
	all, _ := c.cron().jobs.Load(ctx)
	fmt.Fprintf(cmd.ErrOrStderr(), "hermes cron: scheduler running (%d job(s); %s); Ctrl-C stops it\n", len(all), via)
	err = <-done
	fmt.Fprintln(cmd.ErrOrStderr(), "hermes cron: stopped")
	return err
}

func scheduleText(j *cron.Job) string {
	s := j.Spec.Schedule
	if sch, err := j.Schedule(); err == nil && sch.Kind() == cron.KindOnce {
		return "once at " + localTime(j, sch.Next(time.Time{}))
	}
	if j.Spec.Timezone != "" {
		s += " (" + j.Spec.Timezone + ")"
	}
	return s
}

func localTime(j *cron.Job, t time.Time) string {
	loc := time.Local
	if j.Spec.Timezone != "" {
		if l, err := time.LoadLocation(j.Spec.Timezone); err == nil {
			loc = l
		}
	}
	return t.In(loc).Format("2006-01-02 15:04 MST")
}

func nextText(j *cron.Job) string {
	switch {
	case len(j.Open) > 0:
		return "running"
	case !j.Active():
		return "-"
	case j.Retry != nil:
		return "now (retry)"
	}
	if n := j.NextSlot(); !n.IsZero() {
		return localTime(j, n)
	}
	return "-"
}

func lastText(j *cron.Job) string {
	if j.Last == nil {
		return "-"
	}
	return j.Last.Status + " " + j.Last.StartedAt.Local().Format("01-02 15:04")
}

func jobsJSON(js []*cron.Job) []map[string]any {
	out := []map[string]any{}
	for _, j := range js {
		m := map[string]any{"id": j.ID, "spec": j.Spec, "state": j.State(), "created_at": j.CreatedAt, "runs": j.Runs}
		if n := j.NextSlot(); !n.IsZero() && j.Active() {
			m["next_run_at"] = n
		}
		if j.Last != nil {
			m["last"] = map[string]any{"run_id": j.Last.ID, "status": j.Last.Status, "error": j.Last.Error, "started_at": j.Last.StartedAt}
		}
		out = append(out, m)
	}
	return out
}

func printHistory(w io.Writer, j *cron.Job, entries []cron.Entry) error {
	fmt.Fprintf(w, "job %s (%s): %s, %s\n\n", j.ID, j.Spec.Name, scheduleText(j), j.State())
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tEVENT\tRUN\tSLOT\tTRY\tSTATUS\tCOST\tDETAIL")
	for _, e := range entries {
		at := e.At.Local().Format("2006-01-02 15:04:05")
		if e.Run == nil {
			fmt.Fprintf(tw, "%s\t%s\t\t\t\t\t\t%s\n", at, e.Kind, e.Detail)
			continue
		}
		r := e.Run
		status, cost, detail := r.Status, "", r.Deliveries()
		if !r.Finished {
			status = "running"
		}
		if r.CostUSD > 0 {
			cost = fmt.Sprintf("$%.4f", r.CostUSD)
		}
		if r.Error != "" {
			detail = strings.TrimPrefix(strings.Join([]string{r.Error, detail}, "; "), "; ")
			detail = strings.TrimSuffix(detail, "; -")
		}
		trigger := r.Trigger
		if trigger == schema.TriggerSchedule {
			trigger = ""
		}
		fmt.Fprintf(tw, "%s\trun %s\t%s\t%s\t%d\t%s\t%s\t%s\n", at, trigger, r.ID, localTime(j, r.ScheduledFor), r.Attempt, status, cost, detail)
	}
	return tw.Flush()
}
