package main

import (
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

func mcpAddCmd(g *app.Factory) *cobra.Command {
	var sc mcp.ServerConfig
	var headers, env []string
	var timeout, connect time.Duration
	var disabled, force bool
	cmd := &cobra.Command{
		Use:   "add NAME [flags] (-- COMMAND ARGS... | --url URL)",
		Short: "Add an MCP server to config.yaml (a command speaking MCP on stdio, or an HTTP endpoint)",
		Example: `  hermes mcp add fs -- npx -y @modelcontextprotocol/server-filesystem ~/projects
  hermes mcp add github --url https://api.githubcopilot.com/mcp/ --header 'Authorization=Bearer ${GITHUB_TOKEN}'
  hermes mcp add old --url http://127.0.0.1:8000/sse --transport sse`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if dash := cmd.ArgsLenAtDash(); dash > 0 {
				if dash != 1 {
					return errors.New("give the server's name before --, its command after it")
				}
			}
			if rest := args[1:]; len(rest) > 0 {
				sc.Command, sc.Args = rest[0], rest[1:]
			}
			var err error
			if sc.Headers, err = pairs("--header", headers); err != nil {
				return err
			}
			if sc.Env, err = pairs("--env", env); err != nil {
				return err
			}
			sc.Timeout, sc.ConnectTimeout = mcp.Seconds(timeout), mcp.Seconds(connect)
			if disabled {
				off := false
				sc.Enabled = &off
			}
			if err := sc.Validate(name); err != nil {
				return err
			}
			home, err := g.ResolveHome()
			if err != nil {
				return err
			}
			path := filepath.Join(home, "config.yaml")
			err = editConfig(path, func(root *yaml.Node) error {
				servers := section(root, "mcp_servers")
				if i := keyIndex(servers, name); i >= 0 {
					if !force {
						return fmt.Errorf("mcp_servers.%s exists already; remove it first (hermes mcp remove %s) or pass --force", name, name)
					}
					servers.Content = append(servers.Content[:i], servers.Content[i+2:]...)
				}
				servers.Content = append(servers.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: name}, serverNode(sc))
				return nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "added MCP server %s to %s; its tools are mcp_%s_*; try it: hermes mcp test %s\n", name, path, name, name)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&sc.URL, "url", "", "the server's MCP endpoint (streamable HTTP, or SSE with --transport sse)")
	fl.StringVar(&sc.Transport, "transport", "", "http (streamable HTTP, the default for --url) or sse")
	fl.StringArrayVar(&headers, "header", nil, "an HTTP header K=V (repeatable; ${VAR} is read from the environment)")
	fl.StringArrayVar(&env, "env", nil, "an environment variable K=V for the server's process (repeatable)")
	fl.DurationVar(&timeout, "timeout", 0, "bound of one tool call (default 300s)")
	fl.DurationVar(&connect, "connect-timeout", 0, "bound of connecting, and of the first prompt's wait for the server (default 60s)")
	fl.BoolVar(&sc.Approval, "approval", false, "its tools ask before they run, as dangerous commands do")
	fl.StringArrayVar((*[]string)(&sc.Tools.Include), "include", nil, "keep only this tool of the server (repeatable, wildcards allowed)")
	fl.StringArrayVar((*[]string)(&sc.Tools.Exclude), "exclude", nil, "leave out this tool of the server (repeatable, wildcards allowed)")
	fl.BoolVar(&disabled, "disabled", false, "add it with enabled: false")
	fl.BoolVar(&force, "force", false, "replace a server of that name")
	return cmd
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
