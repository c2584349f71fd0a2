package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
)

func configCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Show, change and locate config.yaml"}
	path := &cobra.Command{
		Use: "path", Short: "Print the path of config.yaml", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := g.resolveHome()
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), filepath.Join(home, "config.yaml"))
			return nil
		},
	}
	show := &cobra.Command{
		Use: "show", Short: "Show the configuration in effect (file, environment and defaults), secrets masked", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := g.resolveHome()
			if err != nil {
				return err
			}
			return showConfig(cmd, home)
		},
	}
	set := &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Set a key of config.yaml (dotted: agent.max_turns 40); the rest of the file, comments included, is kept",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := g.resolveHome()
			if err != nil {
				return err
			}
			if err := setConfig(home, args[0], args[1]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s = %s\n", filepath.Join(home, "config.yaml"), args[0], args[1])
			return nil
		},
	}
	cmd.AddCommand(path, show, set)
	return cmd
}

// mask shows that a secret is set without showing it.
func mask(s string) string {
	switch {
	case s == "":
		return "(not set)"
	case len(s) <= 8:
		return "****"
	}
	return s[:3] + "…" + s[len(s)-2:] + fmt.Sprintf(" (%d chars)", len(s))
}

func showConfig(cmd *cobra.Command, home string) error {
	c, err := loadConfig(home)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	path := filepath.Join(home, "config.yaml")
	if _, err := os.Stat(path); err != nil {
		fmt.Fprintf(w, "# %s does not exist: defaults and the environment apply\n", path)
	} else {
		fmt.Fprintf(w, "# %s\n", path)
	}
	r, rerr := resolve(home, c, Overrides{})
	if rerr != nil {
		fmt.Fprintf(w, "# not usable yet: %v\n", rerr)
	}
	key := "(not set)"
	if r.LLM.APIKey != "" {
		key = mask(r.LLM.APIKey)
		if r.LLM.KeyEnv != "" && os.Getenv(r.LLM.KeyEnv) != "" {
			key += " from $" + r.LLM.KeyEnv
		}
	} else if r.LLM.KeyEnv != "" {
		key = "(not set: export " + r.LLM.KeyEnv + ")"
	}
	line := func(k string, v any) { fmt.Fprintf(w, "%-28s %v\n", k+":", v) }
	line("model", orDash(r.Model))
	line("provider", orDash(r.LLM.Provider))
	line("api_mode", orDash(r.Mode))
	line("base_url", orDash(r.LLM.BaseURL))
	line("api_key", key)
	store := first(os.Getenv("HERMES_STORE"), c.Store)
	if spec, err := parseStore(store); err == nil {
		store = spec.String() // the password redacted
		if os.Getenv("HERMES_STORE") != "" {
			store += " from $HERMES_STORE"
		}
	} else {
		store = redactURL(store)
	}
	line("store", store)
	line("agent.max_turns", r.MaxTurns)
	line("agent.tool_timeout", r.ToolTimeout)
	line("terminal.timeout", r.TerminalTimeout)
	line("compression.enabled", r.Compression.Enabled)
	line("context_window", orDash(fmt.Sprint(r.ContextWindow)))
	line("budget.max_cost_per_session", r.MaxCostPerSession)
	line("budget.max_cost_per_day", r.MaxCostPerDay)
	line("command_allowlist", r.AllowList)
	for i, m := range r.FallbackModels {
		line(fmt.Sprintf("fallback_providers[%d]", i), m+" via "+orDash(r.Fallbacks[i].Provider)+", key "+mask(r.Fallbacks[i].APIKey))
	}
	gs, gerr := resolveGateway(c)
	if gerr != nil {
		fmt.Fprintf(w, "# gateway: %v\n", gerr)
	} else {
		line("gateway.bus", orDash(gs.Bus))
		line("platforms.api_server", fmt.Sprintf("enabled=%v %s:%d key %s", gs.Platforms.APIServer.Enabled, gs.Platforms.APIServer.Host, gs.Platforms.APIServer.Port, mask(gs.Platforms.APIServer.Key)))
		line("platforms.telegram", fmt.Sprintf("token %s, allowed users %v", mask(gs.Platforms.Telegram.Token), gs.Platforms.Telegram.AllowedUsers))
		line("platforms.slack", fmt.Sprintf("bot token %s, app token %s, signing secret %s, events %s, allowed users %v", mask(gs.Platforms.Slack.BotToken),
			mask(gs.Platforms.Slack.AppToken), mask(gs.Platforms.Slack.SigningSecret), orDash(gs.Platforms.Slack.EventsListen), gs.Platforms.Slack.AllowedUsers))
		line("platforms.matrix", fmt.Sprintf("homeserver %s, user %s, access token %s, password %s, allowed users %v", orDash(gs.Platforms.Matrix.Homeserver), orDash(gs.Platforms.Matrix.UserID), mask(gs.Platforms.Matrix.AccessToken), mask(gs.Platforms.Matrix.Password), gs.Platforms.Matrix.AllowedUsers))
		line("platforms.email", fmt.Sprintf("address %s, imap %s:%d, smtp %s:%d, password %s, allowed users %v", orDash(gs.Platforms.Email.Address),
			orDash(gs.Platforms.Email.IMAPHost), gs.Platforms.Email.IMAPPort, orDash(gs.Platforms.Email.SMTPHost), gs.Platforms.Email.SMTPPort,
			mask(gs.Platforms.Email.Password), gs.Platforms.Email.AllowedUsers))
		line("platforms.xmpp", fmt.Sprintf("jid %s, password %s, rooms %v, allowed users %v", orDash(gs.Platforms.XMPP.JID), mask(gs.Platforms.XMPP.Password), gs.Platforms.XMPP.Rooms, gs.Platforms.XMPP.AllowedUsers))
		line("platforms.webhook", fmt.Sprintf("enabled=%v %s:%d, %d route(s)", gs.Platforms.Webhook.Enabled, gs.Platforms.Webhook.Host, gs.Platforms.Webhook.Port, len(gs.Platforms.Webhook.Routes)))
	}
	for _, k := range c.ignored {
		fmt.Fprintf(w, "# ignored (not used by this build): %s\n", k)
	}
	return nil
}

func orDash(s string) string {
	if s == "" || s == "0" {
		return "-"
	}
	return s
}

// setConfig sets dotted key to value in config.yaml. The key must be one
// this build knows (a misspelt key would silently do nothing); value is
// read as YAML (true, 40, [a, b], a string). The file is checked as a
// whole before it is replaced, atomically.
func setConfig(home, key, value string) error {
	path := filepath.Join(home, "config.yaml")
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var doc yaml.Node
	if len(bytes.TrimSpace(data)) > 0 {
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if doc.Kind == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("%s: the top of the file is not a mapping", path)
	}
	var val yaml.Node
	if err := yaml.Unmarshal([]byte(value), &val); err != nil || len(val.Content) != 1 {
		val = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}}}
	}
	parts := strings.Split(key, ".")
	n := root
	for i, p := range parts {
		if p == "" {
			return fmt.Errorf("key %q: empty part", key)
		}
		var found *yaml.Node
		for j := 0; j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value == p {
				found = n.Content[j+1]
				if i == len(parts)-1 {
					n.Content[j+1] = val.Content[0]
				}
				break
			}
		}
		if i == len(parts)-1 {
			if found == nil {
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: p}, val.Content[0])
			}
			break
		}
		if found == nil {
			found = &yaml.Node{Kind: yaml.MappingNode}
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: p}, found)
		}
		if found.Kind != yaml.MappingNode {
			return fmt.Errorf("key %q: %s is not a section", key, strings.Join(parts[:i+1], "."))
		}
		n = found
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return err
	}
	// The result must be a config this build accepts, key and value.
	var check yaml.Node
	if err := yaml.Unmarshal(out, &check); err != nil {
		return err
	}
	keys := checkKeys(&check)
	for _, p := range keys.problems {
		return fmt.Errorf("not set: %s", p.msg)
	}
	for _, k := range keys.ignored {
		if k == parts[0] {
			return fmt.Errorf("not set: %s is not a key this build knows", key)
		}
	}
	var c Config
	if err := check.Decode(&c); err != nil {
		return fmt.Errorf("not set: %s %q: %w", key, value, err)
	}
	if bad := checkValues(c, keys.set); len(bad) > 0 {
		return fmt.Errorf("not set: %s", strings.Join(bad, "; "))
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
