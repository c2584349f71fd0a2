package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
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
