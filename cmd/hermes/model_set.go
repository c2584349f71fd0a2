package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/model/catalog"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// modelSetOptions are the flags and arguments of `hermes model set`.
type modelSetOptions struct {
	app     *app.Factory
	io      app.IOStreams
	target  string
	baseURL string
}

// modelSetCmd is `hermes model set`.
func modelSetCmd(g *app.Factory) *cobra.Command {
	opts := &modelSetOptions{app: g}
	cmd := &cobra.Command{
		Use:   "set PROVIDER[/MODEL]",
		Short: "Choose a provider and model without the picker (openrouter/anthropic/claude-opus-4.8; the provider's first model when none is named)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.target = args[0]
			return runModelSet(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.baseURL, "base-url", "", "the provider's endpoint, instead of its default")
	return cmd
}

// runModelSet runs `hermes model set`.
func runModelSet(ctx context.Context, opts *modelSetOptions) error {
	home, err := opts.app.ResolveHome()
	if err != nil {
		return err
	}
	name, m, _ := strings.Cut(opts.target, "/")
	p, ok := catalog.Lookup(name)
	if !ok {
		return catalog.UnknownError("provider", name)
	}
	if m == "" {
		if m = p.DefaultModel(); m == "" {
			return fmt.Errorf("%s lists no models: name one, as in hermes model set %s/MODEL", p.ID, p.ID)
		}
	}
	base := first(opts.baseURL, p.BaseURL)
	if base == "" && p.NeedsBaseURL && p.ID != "custom" {
		return fmt.Errorf("%s has no default endpoint: pass --base-url", p.ID)
	}
	if _, listed := p.Model(m); !listed && len(p.Models) > 0 {
		fmt.Fprintf(opts.io.ErrOut, "note: %s is not among %s's listed models (hermes model list --provider %s); set anyway\n", m, p.ID, p.ID)
	}
	return writeModelChoice(opts.io.Out, home, config.ModelChoice{Provider: p.ID, Model: m, BaseURL: base, APIMode: p.Mode})
}
