package main

import (
	"context"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/prompt"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/adapters/acp"
	"github.com/hermes-go/hermes/adapters/mcp"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// acpOptions are the flags of `hermes acp`.
type acpOptions struct {
	app *app.Factory
	io  app.IOStreams
	ov  config.Overrides
}

func acpCmd(g *app.Factory) *cobra.Command {
	opts := &acpOptions{app: g}
	cmd := &cobra.Command{
		Use:   "acp",
		Short: "Serve Hermes to an editor over the Agent Client Protocol on stdio (Zed, JetBrains, Neovim, any ACP client)",
		Long: `Speak the Agent Client Protocol on stdin and stdout: an editor starts "hermes acp" as its agent server.
Each session the editor opens is a Hermes session (source acp) working in the editor's project directory,
listed by "hermes sessions list" and resumable with "hermes chat --resume". Approvals of dangerous commands
are asked in the editor. Diagnostics go to stderr (--log-level); stdout carries only the protocol.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runACP(cmd.Context(), opts)
		},
	}
	cmd.AddCommand(&cobra.Command{
		Use:    "attach SOCKET",
		Short:  "Show a command of Hermes' terminal tool in an editor's terminal (run by the editor, not by people)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			io := ioOf(cmd)
			// The exit code is the command's, and nothing else is
			// printed: the editor shows this terminal as the command's.
			os.Exit(acp.Attach(args[0], os.Getenv(acp.TokenEnv), io.Out, io.ErrOut))
			return nil
		},
	})
	fl := cmd.Flags()
	fl.StringVarP(&opts.ov.Model, "model", "m", "", "model name")
	fl.StringVar(&opts.ov.Provider, "provider", "", "provider name (openai, anthropic, openrouter, ...)")
	fl.StringVar(&opts.ov.BaseURL, "base-url", "", "API base URL")
	fl.IntVar(&opts.ov.MaxTurns, "max-turns", 0, "iteration budget of a turn (default agent.max_turns or 90)")
	fl.BoolVar(&opts.ov.Yolo, "yolo", false, "approve dangerous commands without asking the editor (hard-line ones stay blocked)")
	fl.StringVar(&opts.ov.Sandbox, "sandbox", "", "sandbox mode over sandbox.mode: read-only, workspace-write or full-access")
	return cmd
}

// runACP runs `hermes acp` until the editor disconnects or a signal.
func runACP(ctx context.Context, opts *acpOptions) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ag := &acp.Agent{Log: opts.app.Log, Version: app.Version()}
	c, err := newChatter(opts.app, opts.ov, ag, func(d *session.Deps, _ model.Provider, _ config.Resolved) {
		// A permission request names the tool call it is about.
		d.Exec = acp.CallExecutor{Next: d.Exec}
	})
	if err != nil {
		return err
	}
	defer c.Stop()
	ag.Turns, ag.Store, ag.Images = c.Mgr, c.App.Store, c.App.Blobs()
	ag.Create = func(ctx context.Context, cwd string) (string, error) {
		id := uuid.NewString()
		return id, c.startIn(ctx, id, cwd)
	}
	ag.MCP = editorMCP(c, opts.app.Log)
	ag.Open = func(ctx context.Context, id string) error {
		_, err := c.Mgr.Session(ctx, id)
		return err
	}
	err = ag.Serve(ctx, opts.io.In, opts.io.Out)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// startIn creates session id, from source acp, working in cwd (the
// editor's project) rather than in the directory hermes was started in.
func (c *chatter) startIn(ctx context.Context, id, cwd string) error {
	var index []prompt.Skill
	if slices.Contains(c.Tools, "skill_view") {
		offered, _ := app.Library(c.App.Home, cwd).Offered(c.skillWhere("acp", c.Tools))
		for _, s := range offered {
			index = append(index, prompt.Skill{Name: s.Name, Description: s.Description})
		}
	}
	mem := c.memoryConfig()
	sys := prompt.Build(prompt.Options{Home: c.App.Home, WorkingDir: cwd, ToolNames: c.Tools, Skills: index, Now: time.Now(), NoMemory: !mem.On(), NoUserProfile: !mem.UserOn()})
	return session.Create(ctx, c.App.Store, id, session.Start{Source: "acp", Model: c.Cfg.Model, Provider: c.Cfg.LLM.Provider, WorkingDir: cwd, System: sys})
}

// editorMCP starts the MCP servers the editor passes with its sessions, as
// mcp_servers entries of config.yaml would be: each once per process (the
// editor passes the same list with every session), a configured server of
// the same name winning over the editor's.
func editorMCP(c *chatter, log zerolog.Logger) func(context.Context, []acp.MCPServer) error {
	var mu sync.Mutex
	started := map[string]mcp.ServerConfig{}
	return func(_ context.Context, servers []acp.MCPServer) error {
		mu.Lock()
		defer mu.Unlock()
		fresh := map[string]mcp.ServerConfig{}
		for _, s := range servers {
			sc := mcp.ServerConfig{Command: s.Command, Args: s.Args, Env: s.Env, URL: s.URL, Headers: s.Headers, Transport: s.Transport}
			if _, ok := c.Cfg.MCPServers[s.Name]; ok {
				log.Warn().Str("mcp_server", s.Name).Msg("acp: the editor's MCP server has the name of one in config.yaml, which is used")
				continue
			}
			if prev, ok := started[s.Name]; ok {
				if !reflect.DeepEqual(prev, sc) {
					log.Warn().Str("mcp_server", s.Name).Msg("acp: the editor passed another MCP server of this name; the first one stays")
				}
				continue
			}
			fresh[s.Name] = sc
		}
		if len(fresh) == 0 {
			return nil
		}
		if err := app.AddMoreMCP(c.Reg, c.App.Home, c.App.Store, c.Cfg, c.Hooks, fresh, log); err != nil {
			return err
		}
		for n, sc := range fresh {
			started[n] = sc
			log.Info().Str("mcp_server", n).Msg("acp: the editor's MCP server is starting")
		}
		return nil
	}
}
