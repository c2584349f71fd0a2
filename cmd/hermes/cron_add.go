package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/schema"
)

// cronAddOptions are the flags and arguments of `hermes cron add`.
type cronAddOptions struct {
	app *app.Factory
	io  app.IOStreams
	add *jobFlags
}

// cronAddCmd is `hermes cron add`.
func cronAddCmd(g *app.Factory) *cobra.Command {
	opts := &cronAddOptions{app: g, add: &jobFlags{}}
	addCmd := &cobra.Command{Use: "add", Short: "Add a job", Args: cobra.NoArgs,
		Example: `  hermes cron add --schedule "0 9 * * 1-5" --tz Europe/Berlin --deliver telegram:111111 --prompt "Summarise my inbox"`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runCronAdd(cmd.Context(), opts)
		},
	}
	opts.add.register(addCmd)
	addCmd.Flags().BoolVar(&opts.add.paused, "paused", false, "create the job paused")
	return addCmd
}

// runCronAdd runs `hermes cron add`.
func runCronAdd(ctx context.Context, opts *cronAddOptions) error {
	h, err := openCronHome(opts.app)
	if err != nil {
		return err
	}
	defer h.a.Close()
	var spec schema.JobSpec
	if err := opts.add.apply(opts.io.In, &spec); err != nil {
		return err
	}
	if spec.Timezone == "" && !strings.HasPrefix(spec.Schedule, "CRON_TZ=") && !strings.HasPrefix(spec.Schedule, "TZ=") {
		spec.Timezone = h.set.Timezone
	}
	spec, err = cron.Normalize(spec, h.jobs.Now(), h.rules)
	if err != nil {
		return err
	}
	j, err := h.jobs.Create(ctx, spec, !opts.add.paused, "cli")
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.io.Out, "job %s (%s): %s, next run %s, delivered to %s\n", j.ID, j.Spec.Name, scheduleText(j), nextText(j), j.Spec.Deliver)
	return nil
}

// jobFlags are the flags of `hermes cron add` and `edit`.
type jobFlags struct {
	schedule, tz, prompt, promptFile, script, name, deliver, model, catchUp, onCrash, timeout string
	toolsets                                                                                  []string
	noAgent, paused                                                                           bool
	maxCost                                                                                   float64
	// changed says which flags were given (register sets it to cobra's).
	changed func(name string) bool
}

func (f *jobFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	f.changed = fl.Changed
	fl.StringVar(&f.schedule, "schedule", "", `when: "0 9 * * 1-5" (cron), "every 30m", "in 2h", or a time such as 2026-06-01T09:00`)
	fl.StringVar(&f.tz, "tz", "", "time zone of the schedule, such as Europe/Berlin (default cron.timezone, else the machine's)")
	fl.StringVar(&f.prompt, "prompt", "", "what each run asks the agent (self-contained: nobody is there to answer questions)")
	fl.StringVar(&f.promptFile, "prompt-file", "", "read the prompt from this file (- for stdin)")
	fl.StringVar(&f.script, "script", "", "a shell command run first; its output goes to the model with the prompt")
	fl.BoolVar(&f.noAgent, "no-agent", false, "deliver the script's output as it is, without the model")
	fl.StringVar(&f.name, "name", "", "a short name (default: the start of the prompt)")
	fl.StringVar(&f.deliver, "deliver", "", "where answers go: local (a file, the default), none, PLATFORM:CHAT[:THREAD] such as telegram:111111; comma-separated")
	fl.StringSliceVar(&f.toolsets, "toolsets", nil, "restrict the runs to these toolsets (comma-separated)")
	fl.StringVarP(&f.model, "model", "m", "", "model of the runs (default: the configured one)")
	fl.StringVar(&f.catchUp, "catch-up", "", "after downtime: skip, once (default) or all missed runs")
	fl.StringVar(&f.onCrash, "on-crash", "", "a run a crash cut short: retry (once, default) or fail")
	fl.StringVar(&f.timeout, "timeout", "", "how long a run may take, such as 10m (default cron.timeout)")
	fl.Float64Var(&f.maxCost, "max-cost", 0, "cost cap of one run in US dollars")
}

// apply sets the flags given into s; --prompt-file - reads in.
func (f *jobFlags) apply(in io.Reader, s *schema.JobSpec) error {
	ch := f.changed
	if f.promptFile != "" {
		var data []byte
		var err error
		if f.promptFile == "-" {
			data, err = io.ReadAll(in)
		} else {
			data, err = os.ReadFile(f.promptFile)
		}
		if err != nil {
			return fmt.Errorf("--prompt-file: %w", err)
		}
		f.prompt = string(data)
		ch = func(name string) bool { return name == "prompt" || f.changed(name) }
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
