package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/hermes-go/hermes/adapters/mcp"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

func mcpCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "mcp", Short: "MCP: add, list, test and remove MCP servers; serve this Hermes to other agents"}
	cmd.AddCommand(mcpAddCmd(g), mcpListCmd(g), mcpTestCmd(g), mcpRemoveCmd(g), mcpServeCmd(g))
	return cmd
}

// mcpConfig is config.yaml resolved far enough for MCP: the servers and
// what their environment needs (terminal.env_passthrough, keys to keep
// from them).
func mcpConfig(g *app.Factory) (string, config.Resolved, error) {
	home, err := g.ResolveHome()
	if err != nil {
		return "", config.Resolved{}, err
	}
	c, err := config.Load(home)
	if err != nil {
		return "", config.Resolved{}, err
	}
	cfg, err := config.Resolve(home, c, config.Overrides{Model: first(c.Model.Name, "unset")})
	return home, cfg, err
}

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

func mcpRemoveCmd(g *app.Factory) *cobra.Command {
	return &cobra.Command{
		Use: "remove NAME", Short: "Remove an MCP server from config.yaml", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := g.ResolveHome()
			if err != nil {
				return err
			}
			name := args[0]
			path := filepath.Join(home, "config.yaml")
			err = editConfig(path, func(root *yaml.Node) error {
				i := keyIndex(root, "mcp_servers")
				var servers *yaml.Node
				if i >= 0 {
					servers = root.Content[i+1]
				}
				j := keyIndex(servers, name)
				if j < 0 {
					return fmt.Errorf("no MCP server %s in %s; hermes mcp list shows them", name, path)
				}
				servers.Content = append(servers.Content[:j], servers.Content[j+2:]...)
				if len(servers.Content) == 0 {
					root.Content = append(root.Content[:i], root.Content[i+2:]...)
				}
				return nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed MCP server %s from %s\n", name, path)
			return nil
		},
	}
}

// mcpRow is one server in hermes mcp list.
type mcpRow struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	Target    string `json:"target"`
	State     string `json:"state"`
	Tools     int    `json:"tools"`
	Handshake string `json:"handshake,omitempty"`
	Peer      string `json:"peer,omitempty"`
	Error     string `json:"error,omitempty"`
	Approval  bool   `json:"approval,omitempty"`
}

func target(sc mcp.ServerConfig) string {
	if sc.URL != "" {
		return sc.URL
	}
	return strings.TrimSpace(sc.Command + " " + strings.Join(sc.Args, " "))
}

// probe connects to the servers at once and reports each (the disabled
// ones without connecting).
func probe(home string, cfg config.Resolved, names []string, connect bool, log zerolog.Logger) ([]mcpRow, []*mcp.Server, func(), error) {
	keep := app.Secrets(cfg)
	opts := app.MCPOptions(home, cfg, func() []string { return keep.Env(os.Environ()) }, nil, nil, log)
	var rows []mcpRow
	var servers []*mcp.Server
	for _, n := range names {
		sc := cfg.MCPServers[n]
		row := mcpRow{Name: n, Transport: sc.Kind(), Target: target(sc), State: "not checked", Approval: sc.Approval}
		switch {
		case !sc.IsEnabled():
			row.State = "disabled"
		case connect:
			s := mcp.NewServer(n, sc, opts)
			s.Start()
			servers = append(servers, s)
		}
		rows = append(rows, row)
	}
	closeAll := func() {
		done := make(chan struct{}, len(servers))
		for _, s := range servers {
			go func() { s.Close(); done <- struct{}{} }()
		}
		for range servers {
			<-done
		}
	}
	done := make(chan struct{}, len(servers))
	for _, s := range servers {
		go func() { s.Wait(); done <- struct{}{} }()
	}
	for range servers {
		<-done
	}
	for i := range rows {
		for _, s := range servers {
			if s.Name() != rows[i].Name {
				continue
			}
			st := s.Status()
			rows[i].State, rows[i].Tools, rows[i].Error, rows[i].Peer = string(st.State), st.Tools, st.Error, st.Peer
			if st.State == mcp.Starting {
				rows[i].Error = fmt.Sprintf("no answer within connect_timeout (%s)", first(fmt.Sprint(time.Duration(s.Config().ConnectTimeout)), "60s"))
			}
			if st.Handshake > 0 {
				rows[i].Handshake = st.Handshake.Round(time.Millisecond).String()
			}
		}
	}
	return rows, servers, closeAll, nil
}

func mcpListCmd(g *app.Factory) *cobra.Command {
	var asJSON, noConnect bool
	cmd := &cobra.Command{
		Use: "list", Short: "List the MCP servers of config.yaml, connecting to each to show its state, tools and last error", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, cfg, err := mcpConfig(g)
			if err != nil {
				return err
			}
			names := make([]string, 0, len(cfg.MCPServers))
			for n := range cfg.MCPServers {
				names = append(names, n)
			}
			sort.Strings(names)
			rows, _, closeAll, err := probe(home, cfg, names, !noConnect, zerolog.Nop()) // failures are in the table
			if err != nil {
				return err
			}
			defer closeAll()
			out := cmd.OutOrStdout()
			if asJSON {
				if rows == nil {
					rows = []mcpRow{}
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			if len(rows) == 0 {
				fmt.Fprintln(out, "no MCP servers yet; add one: hermes mcp add NAME -- COMMAND ARGS... or hermes mcp add NAME --url URL")
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tTRANSPORT\tTARGET\tSTATE\tTOOLS\tHANDSHAKE\tERROR")
			for _, r := range rows {
				state := r.State
				if r.Approval {
					state += " (approval)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.Name, r.Transport, clip(r.Target, 50), state, r.Tools, r.Handshake, clip(r.Error, 120))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&noConnect, "no-connect", false, "only what config says, without connecting")
	return cmd
}

func mcpTestCmd(g *app.Factory) *cobra.Command {
	return &cobra.Command{
		Use: "test NAME", Short: "Connect to an MCP server, time the handshake and list its tools as the model sees them", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, cfg, err := mcpConfig(g)
			if err != nil {
				return err
			}
			name := args[0]
			sc, ok := cfg.MCPServers[name]
			if !ok {
				return fmt.Errorf("no MCP server %s in %s; hermes mcp list shows them", name, filepath.Join(home, "config.yaml"))
			}
			on := true
			sc.Enabled = &on // test a disabled one too
			cfg.MCPServers = map[string]mcp.ServerConfig{name: sc}
			rows, servers, closeAll, err := probe(home, cfg, []string{name}, true, zerolog.Nop())
			if err != nil {
				return err
			}
			defer closeAll()
			r, out := rows[0], cmd.OutOrStdout()
			if r.State != string(mcp.Connected) {
				return &exitError{code: 1, err: fmt.Errorf("MCP server %s (%s %s) failed: %s", name, r.Transport, r.Target, first(r.Error, r.State))}
			}
			fmt.Fprintf(out, "connected to %s over %s in %s (process start or connection, and the MCP handshake)\n", first(r.Peer, name), r.Transport, r.Handshake)
			ts := servers[0].Tools()
			fmt.Fprintf(out, "%d tools, as the model sees them (toolset %s):\n", len(ts), mcp.Toolset(name))
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			for _, t := range ts {
				fmt.Fprintf(tw, "  %s\t%s\n", t.Spec().Name, clip(strings.Join(strings.Fields(t.Spec().Description), " "), 80))
			}
			return tw.Flush()
		},
	}
}

// editConfig rewrites config.yaml through edit, keeping the rest of the
// document (order, comments), and refuses a result that does not load.
func editConfig(path string, edit func(root *yaml.Node) error) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var doc yaml.Node
	if len(old) > 0 {
		if err := yaml.Unmarshal(old, &doc); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("%s: the document is not a mapping of keys", path)
	}
	if err := edit(root); err != nil {
		return err
	}
	var buf strings.Builder
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	enc.Close()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(buf.String()), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if _, err := config.Load(filepath.Dir(path)); err != nil {
		if len(old) > 0 {
			os.WriteFile(path, old, 0o600)
		} else {
			os.Remove(path)
		}
		return fmt.Errorf("the edit was undone: %w", err)
	}
	return nil
}

// keyIndex is the index of key's node in mapping m (-1: absent).
func keyIndex(m *yaml.Node, key string) int {
	if m == nil || m.Kind != yaml.MappingNode {
		return -1
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return i
		}
	}
	return -1
}

// section returns the mapping under key in root, making it.
func section(root *yaml.Node, key string) *yaml.Node {
	if i := keyIndex(root, key); i >= 0 {
		v := root.Content[i+1]
		if v.Kind != yaml.MappingNode { // mcp_servers: (empty) or {}
			*v = yaml.Node{Kind: yaml.MappingNode}
		}
		v.Style = 0
		return v
	}
	m := &yaml.Node{Kind: yaml.MappingNode}
	root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, m)
	return m
}

// serverNode is an mcp_servers entry with only the keys that are set.
func serverNode(sc mcp.ServerConfig) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	add := func(k string, v *yaml.Node) {
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, v)
	}
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }
	list := func(l []string) *yaml.Node {
		seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, s := range l {
			seq.Content = append(seq.Content, str(s))
		}
		return seq
	}
	dict := func(m map[string]string) *yaml.Node {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := &yaml.Node{Kind: yaml.MappingNode}
		for _, k := range keys {
			d.Content = append(d.Content, str(k), str(m[k]))
		}
		return d
	}
	if sc.Command != "" {
		add("command", str(sc.Command))
		if len(sc.Args) > 0 {
			add("args", list(sc.Args))
		}
	}
	if len(sc.Env) > 0 {
		add("env", dict(sc.Env))
	}
	if sc.URL != "" {
		add("url", str(sc.URL))
	}
	if len(sc.Headers) > 0 {
		add("headers", dict(sc.Headers))
	}
	if sc.Transport != "" {
		add("transport", str(sc.Transport))
	}
	if sc.Timeout > 0 {
		add("timeout", str(secs(sc.Timeout)))
	}
	if sc.ConnectTimeout > 0 {
		add("connect_timeout", str(secs(sc.ConnectTimeout)))
	}
	if sc.Approval {
		add("approval", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
	}
	if sc.Enabled != nil && !*sc.Enabled {
		add("enabled", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "false"})
	}
	if len(sc.Tools.Include) > 0 || len(sc.Tools.Exclude) > 0 {
		t := &yaml.Node{Kind: yaml.MappingNode}
		if len(sc.Tools.Include) > 0 {
			t.Content = append(t.Content, str("include"), list(sc.Tools.Include))
		}
		if len(sc.Tools.Exclude) > 0 {
			t.Content = append(t.Content, str("exclude"), list(sc.Tools.Exclude))
		}
		add("tools", t)
	}
	return n
}

// secs writes a duration as Hermes does: whole seconds as a number.
func secs(s mcp.Seconds) string {
	d := time.Duration(s)
	if d%time.Second == 0 {
		return fmt.Sprint(int64(d / time.Second))
	}
	return d.String()
}
