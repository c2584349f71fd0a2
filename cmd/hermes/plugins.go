package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/plugins"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

func pluginsCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "plugins", Short: "Plugins: install from a directory or a git repository (pinned), list, update, remove, enable, disable, run their commands"}
	cmd.AddCommand(pluginsInstallCmd(g), pluginsListCmd(g), pluginsUpdateCmd(g), pluginsRemoveCmd(g), pluginsEnableCmd(g, true), pluginsEnableCmd(g, false),
		pluginsRunCmd(g), pluginsExecCmd(g))
	return cmd
}

// withBook opens the home and hands fn its plugins.
func withBook(g *app.Factory, fn func(a *app.App, b *plugins.Book) error) error {
	a, err := g.Open()
	if err != nil {
		return err
	}
	defer a.Close()
	return fn(a, app.PluginBook(a.Home, a.Store))
}

// pinLine says what a plugin is pinned to.
func pinLine(p plugins.Plugin) string {
	at := p.Hash
	if len(at) > 19 {
		at = at[:19]
	}
	if p.Commit != "" {
		at = "commit " + p.Commit[:min(12, len(p.Commit))] + ", " + at
	}
	return at
}

// registers says what a plugin registers.
func registers(p plugins.Plugin) string {
	var parts []string
	if len(p.Tools) > 0 {
		parts = append(parts, "tools "+strings.Join(p.Tools, ","))
	}
	if len(p.Hooks) > 0 {
		parts = append(parts, "hooks "+strings.Join(p.Hooks, ","))
	}
	if len(p.Commands) > 0 {
		parts = append(parts, "commands "+strings.Join(p.Commands, ","))
	}
	if len(p.Providers) > 0 {
		parts = append(parts, "providers "+strings.Join(p.Providers, ","))
	}
	if len(p.Platforms) > 0 {
		parts = append(parts, "platforms "+strings.Join(p.Platforms, ","))
	}
	return strings.Join(parts, "; ")
}

// needs says what a plugin needs.
func needs(p plugins.Plugin) string {
	s := "network " + p.Network
	if len(p.Hosts) > 0 {
		s += " (" + strings.Join(p.Hosts, ",") + ")"
	}
	s += ", workspace " + p.Workspace
	if len(p.Env) > 0 {
		s += ", env " + strings.Join(p.Env, ",")
	}
	return s
}

func printPlugin(out interface{ Write([]byte) (int, error) }, verb string, p plugins.Plugin) {
	fmt.Fprintf(out, "%s %s %s from %s (%s)\n  registers: %s\n  needs: %s\n", verb, p.Name, p.Version, p.Source, pinLine(p), registers(p), needs(p))
}

// pluginsReport is what /plugins shows: each running plugin's state,
// what it registers, and its last error.
func pluginsReport(h *plugins.Host) string {
	rs := h.Plugins()
	if len(rs) == 0 {
		return "no plugins running: hermes plugins install DIR|GIT-URL adds one (hermes plugins list shows those installed)"
	}
	h.Settle(10 * time.Second)
	var b strings.Builder
	fmt.Fprintf(&b, "%d plugins:", len(rs))
	for _, r := range rs {
		state, errText := "not started", r.Problem
		if r.Server != nil {
			st := r.Server.Status()
			state, errText = string(st.State), st.Error
			if st.Attempts > 0 {
				state += fmt.Sprintf(" (%d failed attempts)", st.Attempts)
			}
		}
		fmt.Fprintf(&b, "\n  %s %s: %s; %s; %s", r.Name, r.Version, state, registers(r.Plugin), pinLine(r.Plugin))
		if errText != "" {
			fmt.Fprintf(&b, "\n    last error: %s", errText)
		}
	}
	return b.String()
}
