package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/hooks"
	"github.com/hermes-go/hermes/adapters/mcp"
	"github.com/hermes-go/hermes/adapters/sandbox"
)

// WorkdirEnv names, in a plugin's environment, the working directory
// Hermes runs in.
const WorkdirEnv = "HERMES_WORKDIR"

// DefaultTimeout bounds a plugin's tool call when its manifest does not.
const DefaultTimeout = 60 * time.Second

// Options are what plugins start with in a Hermes process.
type Options struct {
	// WD is the working directory (writable by plugins that need it).
	WD string
	// Exe is the hermes program: the launcher each plugin is started
	// through (`hermes plugins exec`).
	Exe string
	// Policy is the terminal's sandbox policy, which each plugin's is
	// narrowed from; nil runs plugins unconfined (sandbox.mode:
	// full-access).
	Policy *sandbox.Policy
	// Environ is the environment a plugin's variables are taken from
	// (nil: this process's).
	Environ func() []string
	// MCP are the MCP client's options (dialects, cache, log); Env and
	// Wrap are set here.
	MCP mcp.Options
	Log zerolog.Logger
	// Only, when set, starts that plugin alone (hermes plugins run).
	Only string
}

// Host runs a home's enabled plugins.
type Host struct {
	running []*Running
	opts    Options
}

// Running is one plugin of a Host: its server, or why it is not started.
type Running struct {
	Plugin
	Manifest Manifest
	// Server is the plugin's MCP connection (nil when it was not started).
	Server *mcp.Server
	// Problem says why it was not started.
	Problem string
}

// ServerName is the MCP server name of plugin name (its tools are
// recorded as called on it).
func ServerName(name string) string { return "plugin-" + name }

// Start starts the enabled plugins of b, each connecting in the
// background. A plugin whose files changed since they were pinned, or
// whose manifest is broken, is reported and left out; the others run.
func Start(ctx context.Context, b *Book, opts Options) (*Host, error) {
	all, _, err := b.List(ctx)
	if err != nil {
		return nil, err
	}
	h := &Host{opts: opts}
	for _, p := range all {
		if !p.Enabled || (opts.Only != "" && p.Name != opts.Only) {
			continue
		}
		r := &Running{Plugin: p}
		h.running = append(h.running, r)
		if hash, err := Hash(p.Dir); err != nil || hash != p.Hash {
			r.Problem = fmt.Sprintf("its files changed since it was installed (%s): reinstall or update it", first(errString(err), "hash "+short(hash)+", pinned "+short(p.Hash)))
			opts.Log.Error().Str("plugin", p.Name).Msg("plugin not started: " + r.Problem)
			continue
		}
		m, err := ReadManifest(p.Dir)
		if err != nil {
			r.Problem = err.Error()
			opts.Log.Error().Str("plugin", p.Name).Err(err).Msg("plugin not started")
			continue
		}
		r.Manifest = m
		cfg, err := h.serverConfig(p, m)
		if err != nil {
			r.Problem = err.Error()
			continue
		}
		mo := opts.MCP
		mo.Wrap = nil
		mo.Env = func() []string { return os.Environ() }
		mo.Log = opts.Log
		r.Server = mcp.NewServer(ServerName(p.Name), cfg, &mo)
		r.Server.Start()
	}
	return h, nil
}

func (h *Host) serverConfig(p Plugin, m Manifest) (mcp.ServerConfig, error) {
	environ := os.Environ()
	if h.opts.Environ != nil {
		environ = h.opts.Environ()
	}
	spec := Spec{Name: p.Name, Dir: p.Dir, Command: m.Command, Env: sandbox.FilterEnv(environ, m.Needs.Env)}
	if h.opts.WD != "" {
		// The plugin runs in its own directory; this names the one
		// Hermes works in (writable with needs.workspace: write).
		spec.Env = append(spec.Env, WorkdirEnv+"="+h.opts.WD)
	}
	if h.opts.Policy != nil {
		pol := policyFor(*h.opts.Policy, p, h.opts.WD)
		spec.Policy = &pol
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return mcp.ServerConfig{}, err
	}
	timeout := DefaultTimeout
	if m.Timeout > 0 {
		timeout = time.Duration(m.Timeout) * time.Second
	}
	off := false
	return mcp.ServerConfig{Command: h.opts.Exe, Args: []string{"plugins", "exec"}, Env: map[string]string{SpecEnv: string(raw)},
		Timeout: mcp.Seconds(timeout), ConnectTimeout: mcp.Seconds(20 * time.Second), Tools: mcp.ToolFilter{Resources: &off, Prompts: &off}}, nil
}

// Plugins are the enabled plugins, started or not.
func (h *Host) Plugins() []*Running {
	if h == nil {
		return nil
	}
	return h.running
}

// Settle waits, at most d, for the plugins still starting to connect or
// fail (what /plugins shows is then their state, not "starting").
func (h *Host) Settle(d time.Duration) {
	done := make(chan struct{})
	go func() {
		for _, r := range h.Plugins() {
			if r.Server != nil {
				r.Server.Wait()
			}
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// Close stops every plugin.
func (h *Host) Close() error {
	if h == nil {
		return nil
	}
	var wg sync.WaitGroup
	for _, r := range h.running {
		if r.Server != nil {
			wg.Add(1)
			go func() { defer wg.Done(); r.Server.Close() }()
		}
	}
	wg.Wait()
	return nil
}

// tool finds the plugin's MCP tool raw, waiting for the first connection.
func (r *Running) tool(raw string) (tool.Tool, error) {
	if r.Server == nil {
		return nil, fmt.Errorf("plugin %s is not running: %s", r.Name, r.Problem)
	}
	want := mcp.ToolName(ServerName(r.Name), raw)
	for pass := 0; pass < 2; pass++ {
		for _, t := range r.Server.Tools() {
			if t.Spec().Name == want {
				return t, nil
			}
		}
		r.Server.Wait()
	}
	st := r.Server.Status()
	if st.State != mcp.Connected {
		return nil, fmt.Errorf("plugin %s is %s: %s", r.Name, st.State, first(st.Error, "not connected yet"))
	}
	return nil, fmt.Errorf("plugin %s serves no tool %q (its manifest names it)", r.Name, raw)
}

// Toolsets are the plugins' tools, one toolset (plugin-<name>) each, for
// tools.Registry.AddSource; wrap wraps each tool (redaction, hooks).
func (h *Host) Toolsets(wrap func(tool.Tool) tool.Tool) map[string]*Source {
	out := map[string]*Source{}
	for _, r := range h.Plugins() {
		if r.Server != nil && len(r.Manifest.Tools) > 0 {
			out[ServerName(r.Name)] = &Source{r: r, wrap: wrap}
		}
	}
	return out
}

// Source is one plugin's tools, under the names its manifest gives them
// (a tools.Source and tools.Waiter).
type Source struct {
	r    *Running
	wrap func(tool.Tool) tool.Tool

	mu    sync.Mutex
	gen   uint64
	tools []tool.Tool
	built bool
}

// Tools returns the plugin's model tools as they are now.
func (s *Source) Tools() []tool.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	gen := s.r.Server.Generation()
	if s.built && gen == s.gen {
		return s.tools
	}
	by := map[string]tool.Tool{}
	for _, t := range s.r.Server.Tools() {
		by[t.Spec().Name] = t
	}
	var ts []tool.Tool
	for _, raw := range s.r.Manifest.Tools {
		if t, ok := by[mcp.ToolName(ServerName(s.r.Name), raw)]; ok {
			var x tool.Tool = named{Tool: t, name: raw}
			if s.wrap != nil {
				x = s.wrap(x)
			}
			ts = append(ts, x)
		}
	}
	s.tools, s.gen, s.built = ts, gen, true
	return ts
}

// Generation changes whenever Tools would return something else.
func (s *Source) Generation() uint64 { return s.r.Server.Generation() }

// Wait waits for the plugin's first connection (tools.Waiter).
func (s *Source) Wait() { s.r.Server.Wait() }

// named is a plugin's tool under the name its manifest gives it.
type named struct {
	tool.Tool
	name string
}

func (n named) Spec() model.ToolSpec {
	s := n.Tool.Spec()
	s.Name = n.name
	return s
}

// RegisterHooks adds the plugins' hooks to r: each calls the plugin's MCP
// tool with {"payload": ...} within its timeout, in the plugin's sandbox.
func (h *Host) RegisterHooks(r *hooks.Runner) error {
	var errs []error
	for _, p := range h.Plugins() {
		if p.Server == nil {
			continue
		}
		for _, d := range p.Manifest.Hooks {
			timeout := DefaultHookTimeout
			if d.Timeout > 0 {
				timeout = time.Duration(d.Timeout) * time.Second
			}
			raw := d.Tool
			err := r.Register(hooks.Registration{Event: d.Event, Name: "plugin:" + p.Name, Matcher: d.Matcher, Timeout: timeout,
				Run: func(ctx context.Context, payload []byte) ([]byte, error) {
					t, err := p.tool(raw)
					if err != nil {
						return nil, err
					}
					args, _ := json.Marshal(map[string]json.RawMessage{"payload": payload})
					out, err := t.Run(ctx, args)
					return []byte(out), err
				}})
			if err != nil {
				errs = append(errs, fmt.Errorf("plugin %s: %w", p.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Run runs a plugin's CLI command with args and returns what it printed.
func (h *Host) Run(ctx context.Context, plugin, command string, args []string) (string, error) {
	for _, p := range h.Plugins() {
		if p.Name != plugin {
			continue
		}
		for _, c := range p.Manifest.Commands {
			if c.Name == command {
				t, err := p.tool(c.Tool)
				if err != nil {
					return "", err
				}
				if args == nil {
					args = []string{}
				}
				in, _ := json.Marshal(map[string]any{"args": args})
				return t.Run(ctx, in)
			}
		}
		var names []string
		for _, c := range p.Manifest.Commands {
			names = append(names, c.Name)
		}
		return "", fmt.Errorf("plugin %s has no command %q (it has: %s)", plugin, command, first(strings.Join(names, ", "), "none"))
	}
	return "", fmt.Errorf("%w %q, or it is disabled", ErrNotInstalled, plugin)
}

func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// short is a hash cut for people: sha256:1a2b3c4d5e6f.
func short(h string) string {
	if len(h) > 19 {
		return h[:19]
	}
	return h
}
