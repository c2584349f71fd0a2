package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// configShowOptions are the flags and arguments of `hermes config show`.
type configShowOptions struct {
	app *app.Factory
	io  app.IOStreams
}

// configShowCmd is `hermes config show`.
func configShowCmd(g *app.Factory) *cobra.Command {
	opts := &configShowOptions{app: g}
	show := &cobra.Command{
		Use: "show", Short: "Show the configuration in effect (file, environment and defaults), secrets masked", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runConfigShow(cmd.Context(), opts)
		},
	}
	return show
}

// runConfigShow runs `hermes config show`.
func runConfigShow(ctx context.Context, opts *configShowOptions) error {
	home, err := opts.app.ResolveHome()
	if err != nil {
		return err
	}
	return showConfig(opts.io.Out, home)
}

// showConfig prints the configuration of home in effect, secrets masked.
func showConfig(w io.Writer, home string) error {
	c, err := config.Load(home)
	if err != nil {
		return err
	}
	path := filepath.Join(home, "config.yaml")
	if _, err := os.Stat(path); err != nil {
		fmt.Fprintf(w, "# %s does not exist: defaults and the environment apply\n", path)
	} else {
		fmt.Fprintf(w, "# %s\n", path)
	}
	r, rerr := config.Resolve(home, c, config.Overrides{})
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
	if spec, err := config.ParseStore(store); err == nil {
		store = spec.String() // the password redacted
		if os.Getenv("HERMES_STORE") != "" {
			store += " from $HERMES_STORE"
		}
	} else {
		store = config.RedactURL(store)
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
		line("platforms.homeassistant", fmt.Sprintf("url %s, token %s, watch domains %v, entities %v", orDash(gs.Platforms.HomeAssistant.Extra.URL), mask(gs.Platforms.HomeAssistant.Token), gs.Platforms.HomeAssistant.Extra.WatchDomains, gs.Platforms.HomeAssistant.Extra.WatchEntities))
		line("platforms.webhook", fmt.Sprintf("enabled=%v %s:%d, %d route(s)", gs.Platforms.Webhook.Enabled, gs.Platforms.Webhook.Host, gs.Platforms.Webhook.Port, len(gs.Platforms.Webhook.Routes)))
	}
	for _, k := range c.Ignored() {
		fmt.Fprintf(w, "# ignored (not used by this build): %s\n", k)
	}
	return nil
}
