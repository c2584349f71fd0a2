package app

import (
	"context"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/grants"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/hooks"
	"github.com/hermes-go/hermes/adapters/mcp"
	"github.com/hermes-go/hermes/adapters/tools"
	"github.com/hermes-go/hermes/adapters/tools/browser"
	"github.com/hermes-go/hermes/adapters/tools/clarify"
	"github.com/hermes-go/hermes/adapters/tools/code"
	"github.com/hermes-go/hermes/adapters/tools/delegate"
	"github.com/hermes-go/hermes/adapters/tools/files"
	"github.com/hermes-go/hermes/adapters/tools/imagegen"
	"github.com/hermes-go/hermes/adapters/tools/memory"
	"github.com/hermes-go/hermes/adapters/tools/sessionsearch"
	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
	"github.com/hermes-go/hermes/adapters/tools/todo"
	"github.com/hermes-go/hermes/adapters/tools/tts"
	"github.com/hermes-go/hermes/adapters/tools/vision"
	"github.com/hermes-go/hermes/adapters/tools/web"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/blobs"
	"github.com/hermes-go/hermes/projections/search"
)

// Registry registers every tool Hermes has; execute_code gets the
// session's toolbox once config has selected it. Every tool's output is
// redacted of secrets before the loop records it, child processes of
// tools get the environment without Hermes' keys, execute_code is
// approved as the terminal is and only on beside it, and the file tools
// cannot change $HERMES_HOME. Close the registry when Hermes exits: it
// ends background processes.
// cj (the cronjob tool, nil: a new one) gets its store, rules and the
// scheduler from its caller.
//
// MCP servers of mcp_servers: start connecting in the background, each a
// toolset whose tools the live toolbox picks up as they come; shell hooks
// wrap every tool (pre_tool_call and post_tool_call), outside the
// redaction, so that they see what the model will see.
func Registry(home, wd string, store events.Store, cfg config.Resolved, searcher func(context.Context, search.Query) (search.Results, error),
	summarize func(context.Context, string, string) (string, error), cj *CronTool, hk *hooks.Runner, log zerolog.Logger) (*tools.Registry, *code.Tool, error) {
	r := tools.NewRegistry()
	keep := Secrets(cfg)
	env := func() []string { return keep.Env(os.Environ()) }
	wrap := func(ts ...tool.Tool) []tool.Tool { return hk.Tools(keep.Tools(ts...)...) }
	// "Always" answers are grants in the event store; config.yaml is
	// only read (the person's command_allowlist), never written.
	allow := grants.New(store, cfg.AllowList, log)
	approver := &terminal.Approver{Allow: allow, Timeout: cfg.ApprovalTimeout}
	sbs := Sandboxes(home, cfg, log)
	term := terminal.Config{Timeout: cfg.TerminalTimeout, Backend: cfg.Backend, Approver: approver, Env: env, Sandboxes: sbs}
	ex := &code.Tool{Approver: approver, Env: env, Sandboxes: sbs}
	if cj == nil {
		cj = NewCronTool()
	}
	cj.Bind(store, allow)
	browserTools, err := BrowserTools(home, cfg, sbs, env, log)
	if err != nil {
		return nil, nil, err
	}
	roots := files.Roots{Home: home, Scratch: []string{"cache"}, Sandbox: FileGuard(sbs)}
	bs := blobs.Open(home)
	analyzer, err := Analyzer(cfg, bs)
	if err != nil {
		return nil, nil, err
	}
	for _, set := range []struct {
		name  string
		tools []tool.Tool
	}{
		{"terminal", terminal.Tools(term)},
		{"file", files.Tools(roots)},
		{"todo", []tool.Tool{todo.Tool{Store: store}}},
		{"memory", []tool.Tool{MemoryTool(home, store)}},
		{"clarify", []tool.Tool{clarify.Tool{}}},
		{"skills", skills.Tools(offeredLibrary(home, wd, store))},
		{"code_execution", []tool.Tool{ex}},
		{"delegation", []tool.Tool{delegate.Tool{}}},
		{"session_search", []tool.Tool{sessionsearch.Tool{Search: searcher, Summarize: summarize}}},
		{"web", web.Tools(cfg.Web, nil)},
		{browser.Toolset, browserTools},
		{"cronjob", []tool.Tool{cj}},
		{"image_gen", []tool.Tool{imagegen.New(imagegen.Options{Provider: cfg.ImageGen.Provider,
			BaseURL: cfg.ImageGen.BaseURL, APIKey: cfg.ImageGen.APIKey, Model: cfg.ImageGen.Model, Resolution: cfg.ImageGen.Resolution,
			Blobs: bs, Dir: filepath.Join(home, "cache", "images")})}},
		{"tts", []tool.Tool{tts.Tool{Speaker: Speaker(cfg), Dir: filepath.Join(home, "cache", "audio")}}},
	} {
		if err := r.Register(set.name, wrap(set.tools...)...); err != nil {
			return nil, nil, err
		}
		cj.Toolsets = append(cj.Toolsets, set.name)
	}
	// vision_analyze is offered only where a model can see (upstream
	// hides it without a vision backend too).
	if analyzer != nil {
		if err := r.Register("vision", wrap(vision.Tool{Blobs: bs, Readable: roots.Readable, Describe: analyzer})...); err != nil {
			return nil, nil, err
		}
		cj.Toolsets = append(cj.Toolsets, "vision")
	}
	r.Require("execute_code", "terminal")
	if err := AddMCP(r, home, cfg, env, allow, func(t tool.Tool) tool.Tool { return wrap(t)[0] }, log); err != nil {
		r.Close()
		return nil, nil, err
	}
	return r, ex, nil
}

// AddMoreMCP starts servers (those an editor passes to `hermes acp`) in r
// as Registry starts mcp_servers: with the environment without Hermes'
// secrets, their output redacted, the hooks around their tools, the
// approvals of the grants in store. Each is a toolset the live toolbox
// picks up when it connects; Registry.Close stops them.
func AddMoreMCP(r *tools.Registry, home string, store events.Store, cfg config.Resolved, hk *hooks.Runner, servers map[string]mcp.ServerConfig, log zerolog.Logger) error {
	keep := Secrets(cfg)
	env := func() []string { return keep.Env(os.Environ()) }
	wrap := func(t tool.Tool) tool.Tool { return hk.Tools(keep.Tools(t)...)[0] }
	c := cfg
	c.MCPServers = servers
	return AddMCP(r, home, c, env, grants.New(store, cfg.AllowList, log), wrap, log)
}

// MemoryTool is the memory tool of home, its switches (memory.memory_enabled,
// user_profile_enabled, write_approval) read from config.yaml at each call.
func MemoryTool(home string, store events.Store) *memory.Tool {
	t := memory.New(store, filepath.Join(home, "memories"))
	t.Settings = func() memory.Settings {
		f, err := config.Load(home)
		if err != nil {
			// A config.yaml broken meanwhile: memory stays as the
			// defaults have it, and the gate on, to be safe.
			return memory.Settings{Approval: true}
		}
		return memory.Settings{Off: !f.Memory.On(), UserOff: !f.Memory.UserOn(), Approval: f.Memory.WriteApproval}
	}
	return t
}

// offeredLibrary is KeptLibrary whose skills_list leaves out the skills
// not offered on this system or turned off by skills.disabled (which
// platform's chat calls it is not known here: the system prompt's index
// applies skills.platform_disabled).
func offeredLibrary(home, wd string, store events.Store) skills.Library {
	l := KeptLibrary(home, wd, store)
	w := skills.Where{}
	if f, err := config.Load(home); err == nil {
		w.Disabled = f.Skills.Disabled
	}
	l.Where = &w
	return l
}
