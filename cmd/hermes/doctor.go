package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/model/catalog"
	"github.com/hermes-go/hermes/adapters/sandbox"
	"github.com/hermes-go/hermes/adapters/tools/browser"
	"github.com/hermes-go/hermes/adapters/tools/imagegen"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/projections/search"
)

// check is one line of hermes doctor: what was looked at, whether it is
// fine, and what to do when it is not.
type check struct {
	name, detail, fix string
	ok, warn          bool
}

// doctorOptions are the flags and arguments of `hermes doctor`.
type doctorOptions struct {
	app     *app.Factory
	io      app.IOStreams
	offline bool
}

func doctorCmd(g *app.Factory) *cobra.Command {
	opts := &doctorOptions{app: g}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the home, store, index, provider, key and tool prerequisites, and say what to fix",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runDoctor(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.offline, "offline", false, "do not call the provider")
	return cmd
}

// runDoctor runs `hermes doctor`.
func runDoctor(ctx context.Context, opts *doctorOptions) error {
	checks := doctor(ctx, opts.app, opts.offline)
	w := opts.io.Out
	failed := 0
	for _, c := range checks {
		mark := "✓"
		switch {
		case !c.ok:
			mark = "✗"
			failed++
		case c.warn:
			mark = "!"
		}
		fmt.Fprintf(w, "%s %-22s %s\n", mark, c.name, c.detail)
		if c.fix != "" && (!c.ok || c.warn) {
			fmt.Fprintf(w, "  → %s\n", c.fix)
		}
	}
	if failed > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d problem(s) found", failed)}
	}
	fmt.Fprintln(w, "all good")
	return nil
}

func doctor(ctx context.Context, g *app.Factory, offline bool) []check {
	var out []check
	add := func(c check) { out = append(out, c) }
	home, err := g.ResolveHome()
	if err != nil {
		return []check{{name: "home", detail: err.Error(), fix: "set HERMES_HOME or pass --home"}}
	}
	// The home holds keys and every conversation: it should be the
	// user's alone.
	if fi, err := os.Stat(home); err == nil {
		c := check{name: "home", detail: fmt.Sprintf("%s (mode %o)", home, fi.Mode().Perm()), ok: true}
		if fi.Mode().Perm()&0o077 != 0 {
			c.warn, c.fix = true, "others can read it: chmod 700 "+home
		}
		add(c)
	}
	for _, f := range []string{"config.yaml", ".env"} {
		p := filepath.Join(home, f)
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o077 != 0 {
			add(check{name: f, detail: fmt.Sprintf("mode %o: readable by others", fi.Mode().Perm()), ok: true, warn: true, fix: "chmod 600 " + p})
		}
	}
	fileCfg, err := config.Load(home)
	if err != nil {
		add(check{name: "config.yaml", detail: err.Error(), fix: "fix the keys named above (hermes config set KEY VALUE checks them)"})
		return out
	}
	add(check{name: "config.yaml", detail: "valid", ok: true})
	if n := len(fileCfg.Ignored()); n > 0 {
		add(check{name: "config.yaml", detail: fmt.Sprintf("%d key(s) of the Python Hermes Agent ignored: %s", n, strings.Join(fileCfg.Ignored(), ", ")),
			ok: true, warn: true, fix: "nothing to do: they are left for the Python agent, which reads the same file"})
	}
	cfg, err := config.Resolve(home, fileCfg, config.Overrides{})
	if err != nil {
		add(check{name: "model", detail: err.Error(), fix: "hermes config set model NAME (or run hermes setup)"})
	} else {
		add(check{name: "model", detail: fmt.Sprintf("%s (%s, %s)", cfg.Model, orDash(cfg.LLM.Provider), cfg.Mode), ok: true})
	}
	a, err := g.Open()
	if err != nil {
		add(check{name: "event store", detail: err.Error(), fix: "see the error; a damaged store can be checked with hermes store verify"})
		return out
	}
	head, herr := a.Store.Head(ctx)
	if herr != nil {
		add(check{name: "event store", detail: herr.Error()})
	} else {
		add(check{name: "event store", detail: fmt.Sprintf("%s, %d events", filepath.Join(home, "events.db"), head), ok: true})
	}
	behind := 0
	for _, p := range a.Runner.Projections() {
		cp, err := p.Checkpoint(ctx)
		if err != nil {
			add(check{name: "projection " + p.Name(), detail: err.Error(), fix: "hermes projections rebuild " + p.Name()})
			continue
		}
		if cp < head {
			behind++
		}
	}
	add(check{name: "projections", detail: fmt.Sprintf("%d of %d behind the log (brought up to date by any read command)", behind, len(a.Runner.Projections())), ok: true})
	a.Close()
	if idx, err := search.Open(filepath.Join(home, "search.bleve")); err != nil {
		c := check{name: "search index", detail: err.Error(), fix: "hermes search --rebuild QUERY"}
		if errors.Is(err, search.ErrBusy) {
			c.ok, c.warn, c.fix = true, true, "another hermes process is using it"
		}
		add(c)
	} else {
		c := check{name: "search index", detail: "opens", ok: true}
		if idx.Replaced != nil {
			c.detail, c.warn = "was unreadable or old, replaced (it refills on the next search): "+idx.Replaced.Error(), true
		}
		idx.Close()
		add(c)
	}
	if err == nil || cfg.Model != "" {
		add(apiKeyCheck(cfg))
		if !offline {
			add(reach(ctx, cfg))
		}
	}
	if _, err := exec.LookPath("python3"); err != nil {
		add(check{name: "execute_code", detail: "python3 not found", ok: true, warn: true, fix: "install python3 to use execute_code"})
	} else {
		add(check{name: "execute_code", detail: "python3 found", ok: true})
	}
	if path, err := browser.FindChromium(""); err != nil {
		add(check{name: "browser", detail: "no Chromium found", ok: true, warn: true, fix: "apt-get install chromium (or set HERMES_CHROMIUM) to use the browser tools"})
	} else {
		add(check{name: "browser", detail: path, ok: true})
	}
	add(voiceCheck(cfg))
	add(imageCheck(cfg))
	if _, local := cfg.Backend.(terminal.Local); local || cfg.Backend == nil {
		add(sandboxCheck(ctx, home, cfg))
	}
	switch b := cfg.Backend.(type) {
	case terminal.SSH:
		_, err := exec.LookPath("ssh")
		add(check{name: "terminal (ssh)", detail: "host " + b.Host, ok: err == nil, fix: "install an ssh client"})
	case *terminal.Docker:
		_, err := exec.LookPath("docker")
		add(check{name: "terminal (docker)", detail: "image " + b.Image, ok: err == nil, fix: "install docker, or set terminal.backend: local"})
	}
	return out
}

// imageCheck says which service image_generate uses and whether its key
// is set (by the variable's name: the key is not shown).
func imageCheck(cfg config.Resolved) check {
	g := cfg.ImageGen
	p, ok := imagegen.Lookup(g.Provider)
	if !ok {
		return check{name: "image generation", detail: g.Note, ok: true, warn: true,
			fix: "set image_gen.provider to one of " + strings.Join(imagegen.Names(), ", ")}
	}
	m := first(g.Model, p.Model, "the first of its catalog")
	c := check{name: "image generation", detail: p.Name + " (" + m + ")", ok: true}
	if g.APIKey == "" && (p.Name != "openai" || g.BaseURL == "") {
		c.detail += ": " + p.KeyEnv + " is not set"
		c.warn, c.fix = true, "export "+p.KeyEnv+"=… (or put it in $HERMES_HOME/.env) to use image_generate"
	}
	return c
}

func apiKeyCheck(cfg config.Resolved) check {
	if cfg.Mode == model.ModeBedrock {
		return check{name: "API key", detail: "none: Bedrock takes AWS credentials (AWS_ACCESS_KEY_ID…, AWS_PROFILE, a role)", ok: true}
	}
	if cfg.LLM.APIKey != "" {
		return check{name: "API key", detail: mask(cfg.LLM.APIKey), ok: true}
	}
	if isLocal(cfg.LLM.BaseURL) {
		return check{name: "API key", detail: "none (a local server usually needs none)", ok: true}
	}
	env := cfg.LLM.KeyEnv
	if env == "" {
		env = "OPENAI_API_KEY"
	}
	return check{name: "API key", detail: "not set", fix: "export " + env + "=… (or put it in " + "$HERMES_HOME/.env)"}
}

func isLocal(base string) bool {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return false
	}
	ip := net.ParseIP(u.Hostname())
	return u.Hostname() == "localhost" || (ip != nil && ip.IsLoopback())
}

// reach asks the provider for its models: the cheapest call that proves
// the address and the key.
func reach(ctx context.Context, cfg config.Resolved) check {
	if cfg.Mode == model.ModeBedrock {
		return check{name: "provider", detail: "Bedrock: the AWS credentials and region are checked by the first call", ok: true}
	}
	base := cfg.LLM.BaseURL
	if base == "" {
		base = "https://api.openai.com/v1"
		if cfg.Mode == model.ModeAnthropic {
			base = "https://api.anthropic.com/v1"
		}
	}
	u := strings.TrimRight(base, "/") + "/models"
	if cfg.Mode == model.ModeAnthropic && !strings.HasSuffix(strings.TrimRight(base, "/"), "/v1") {
		u = strings.TrimRight(base, "/") + "/v1/models"
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return check{name: "provider", detail: err.Error(), fix: "check base_url"}
	}
	known, _ := catalog.Lookup(cfg.LLM.Provider)
	switch {
	case cfg.Mode == model.ModeAnthropic:
		req.Header.Set("x-api-key", cfg.LLM.APIKey)
		req.Header.Set("anthropic-version", "2023-06-01")
	case cfg.Mode == model.ModeGemini:
		req.Header.Set("x-goog-api-key", cfg.LLM.APIKey)
	case known.KeyHeader != "":
		req.Header.Set(known.KeyHeader, cfg.LLM.APIKey)
	case cfg.LLM.APIKey != "":
		req.Header.Set("Authorization", "Bearer "+cfg.LLM.APIKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return check{name: "provider", detail: fmt.Sprintf("%s: %v", u, err), fix: "is the server running, and is base_url right?"}
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return check{name: "provider", detail: fmt.Sprintf("%s: %s", u, resp.Status), fix: "the key was refused: check " + orDash(cfg.LLM.KeyEnv)}
	case resp.StatusCode >= 400 && resp.StatusCode != http.StatusNotFound:
		return check{name: "provider", detail: fmt.Sprintf("%s: %s", u, resp.Status), ok: true, warn: true, fix: "the server answered with an error"}
	}
	return check{name: "provider", detail: fmt.Sprintf("%s answers (%s)", u, resp.Status), ok: true}
}

// sandboxCheck says what the local backend's sandbox enforces here, after
// starting one for real and running a command in it.
func sandboxCheck(ctx context.Context, home string, cfg config.Resolved) check {
	p := cfg.Sandbox
	if p.Mode == "" {
		p, _ = config.SandboxPolicy(home, config.SandboxConfig{}, "", "config.yaml")
	}
	if p.Mode == sandbox.FullAccess {
		return check{name: "sandbox", detail: "full-access: commands run unconfined", ok: true, warn: true,
			fix: "remove sandbox.mode: full-access from config.yaml to contain commands in the kernel sandbox"}
	}
	pr := sandbox.Probe()
	if !pr.Enforced() {
		return check{name: "sandbox", detail: pr.Refusal().Error(), fix: "the terminal refuses to run here until this is fixed"}
	}
	if wd, err := os.Getwd(); err == nil {
		p.Writable = append(p.Writable, wd)
	}
	c := check{name: "sandbox", ok: true}
	tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	sb, err := sandbox.Start(tctx, p, sandbox.Options{})
	if err == nil {
		var proc *sandbox.Process
		if proc, err = sb.Start(tctx, sandbox.Cmd{Args: []string{"/bin/sh", "-c", "true"}, Env: []string{"PATH=/usr/bin:/bin"}}); err == nil {
			if code, werr := proc.Wait(); werr != nil || code != 0 {
				err = fmt.Errorf("a command in it ended with %d %v", code, werr)
			}
		}
		sb.Close()
	}
	if err != nil {
		c.ok, c.detail, c.fix = false, "could not start: "+err.Error(), "see the error; sandbox.mode: full-access runs commands unconfined"
		return c
	}
	net := string(p.Network)
	if p.Network == sandbox.NetAllow {
		net = "allow " + strings.Join(p.Allow, ", ")
	}
	c.detail = fmt.Sprintf("%s, network %s; %s", p.Mode, net, strings.Join(pr.Lines(), "; "))
	if pr.Cgroup == "" && os.Getuid() == 0 {
		c.warn, c.fix = true, "no cgroup could be made: the number of processes is not bounded for root"
	}
	return c
}

// voiceCheck says which speech engines stt: and tts: use, whether the
// local ones' programs are installed, and which configured engines this
// build replaced.
func voiceCheck(cfg config.Resolved) check {
	s := cfg.Speech
	need := map[string]string{}
	switch s.STTProvider {
	case "local":
		need["pocketsphinx_continuous"], need["ffmpeg"] = "pocketsphinx pocketsphinx-en-us", "ffmpeg"
	}
	switch s.TTSProvider {
	case "flite":
		need["flite"], need["ffmpeg"] = "flite", "ffmpeg"
	case "espeak":
		need["espeak-ng"], need["ffmpeg"] = "espeak-ng", "ffmpeg"
	}
	var missing []string
	for prog, pkg := range need {
		if _, err := exec.LookPath(prog); err != nil {
			missing = append(missing, pkg)
		}
	}
	sort.Strings(missing)
	c := check{name: "voice", detail: fmt.Sprintf("speech to text: %s, text to speech: %s", orDash(s.STTProvider), s.TTSProvider), ok: true}
	if len(s.Notes) > 0 {
		c.detail += "; " + strings.Join(s.Notes, "; ")
		c.warn, c.fix = true, "set stt.provider / tts.provider to one this build speaks to silence this"
	}
	if len(missing) > 0 {
		c.detail += "; not installed: " + strings.Join(missing, ", ")
		c.warn, c.fix = true, "apt-get install "+strings.Join(missing, " ")+" (voice memos and text_to_speech need them)"
	}
	return c
}
