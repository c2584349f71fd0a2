package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/hermes-go/hermes/adapters/mcp"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// mcpAddOptions are the flags and arguments of `hermes mcp add`.
type mcpAddOptions struct {
	app              *app.Factory
	io               app.IOStreams
	sc               mcp.ServerConfig
	headers, env     []string
	timeout, connect time.Duration
	disabled, force  bool
	// args are NAME, then the command after --; dash is where -- was
	// (cobra's ArgsLenAtDash: -1 without one).
	args []string
	dash int
}

func mcpAddCmd(g *app.Factory) *cobra.Command {
	opts := &mcpAddOptions{app: g}
	cmd := &cobra.Command{
		Use:   "add NAME [flags] (-- COMMAND ARGS... | --url URL)",
		Short: "Add an MCP server to config.yaml (a command speaking MCP on stdio, or an HTTP endpoint)",
		Example: `  hermes mcp add fs -- npx -y @modelcontextprotocol/server-filesystem ~/projects
  hermes mcp add github --url https://api.githubcopilot.com/mcp/ --header 'Authorization=Bearer ${GITHUB_TOKEN}'
  hermes mcp add old --url http://127.0.0.1:8000/sse --transport sse`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.args, opts.dash = args, cmd.ArgsLenAtDash()
			return runMCPAdd(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.sc.URL, "url", "", "the server's MCP endpoint (streamable HTTP, or SSE with --transport sse)")
	fl.StringVar(&opts.sc.Transport, "transport", "", "http (streamable HTTP, the default for --url) or sse")
	fl.StringArrayVar(&opts.headers, "header", nil, "an HTTP header K=V (repeatable; ${VAR} is read from the environment)")
	fl.StringArrayVar(&opts.env, "env", nil, "an environment variable K=V for the server's process (repeatable)")
	fl.DurationVar(&opts.timeout, "timeout", 0, "bound of one tool call (default 300s)")
	fl.DurationVar(&opts.connect, "connect-timeout", 0, "bound of connecting, and of the first prompt's wait for the server (default 60s)")
	fl.BoolVar(&opts.sc.Approval, "approval", false, "its tools ask before they run, as dangerous commands do")
	fl.StringArrayVar((*[]string)(&opts.sc.Tools.Include), "include", nil, "keep only this tool of the server (repeatable, wildcards allowed)")
	fl.StringArrayVar((*[]string)(&opts.sc.Tools.Exclude), "exclude", nil, "leave out this tool of the server (repeatable, wildcards allowed)")
	fl.BoolVar(&opts.disabled, "disabled", false, "add it with enabled: false")
	fl.BoolVar(&opts.force, "force", false, "replace a server of that name")
	return cmd
}

// runMCPAdd runs `hermes mcp add`.
func runMCPAdd(ctx context.Context, opts *mcpAddOptions) error {
	name := opts.args[0]
	if dash := opts.dash; dash > 0 {
		if dash != 1 {
			return errors.New("give the server's name before --, its command after it")
		}
	}
	if rest := opts.args[1:]; len(rest) > 0 {
		opts.sc.Command, opts.sc.Args = rest[0], rest[1:]
	}
	var err error
	if opts.sc.Headers, err = pairs("--header", opts.headers); err != nil {
		return err
	}
	if opts.sc.Env, err = pairs("--env", opts.env); err != nil {
		return err
	}
	opts.sc.Timeout, opts.sc.ConnectTimeout = mcp.Seconds(opts.timeout), mcp.Seconds(opts.connect)
	if opts.disabled {
		off := false
		opts.sc.Enabled = &off
	}
	if err := opts.sc.Validate(name); err != nil {
		return err
	}
	home, err := opts.app.ResolveHome()
	if err != nil {
		return err
	}
	path := filepath.Join(home, "config.yaml")
	err = editConfig(path, func(root *yaml.Node) error {
		servers := section(root, "mcp_servers")
		if i := keyIndex(servers, name); i >= 0 {
			if !opts.force {
				return fmt.Errorf("mcp_servers.%s exists already; remove it first (hermes mcp remove %s) or pass --force", name, name)
			}
			servers.Content = append(servers.Content[:i], servers.Content[i+2:]...)
		}
		servers.Content = append(servers.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: name}, serverNode(opts.sc))
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.io.Out, "added MCP server %s to %s; its tools are mcp_%s_*; try it: hermes mcp test %s\n", name, path, name, name)
	return nil
}

// pairs reads K=V flags.
func pairs(flag string, kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%s %q: use KEY=VALUE", flag, kv)
		}
		out[strings.TrimSpace(k)] = v
	}
	return out, nil
}
