package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/model/catalog"
	"github.com/hermes-go/hermes/adapters/llm"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/schema"
)

// setupProvider is a choice of the setup wizard.
type setupProvider struct {
	name, baseURL, keyEnv, model string
}

var setupProviders = []setupProvider{
	{"openai", "", "OPENAI_API_KEY", "gpt-4o-mini"},
	{"anthropic", "", "ANTHROPIC_API_KEY", "claude-sonnet-4-5"},
	{"openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", "openai/gpt-4o-mini"},
	{"local", "http://127.0.0.1:8080/v1", "", ""},
}

// setupOptions are the flags and arguments of `hermes setup`.
type setupOptions struct {
	app                           *app.Factory
	io                            app.IOStreams
	provider, model, baseURL, key string
	noTest                        bool
}

func setupCmd(g *app.Factory) *cobra.Command {
	opts := &setupOptions{app: g}
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "Choose a provider, model and key, test them, and write config.yaml and .env",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.io = ioOf(cmd)
			return runSetup(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.provider, "provider", "", "openai, anthropic, openrouter, local, or any provider of hermes model list")
	fl.StringVarP(&opts.model, "model", "m", "", "model name")
	fl.StringVar(&opts.baseURL, "base-url", "", "API base URL")
	fl.StringVar(&opts.key, "api-key", "", "API key (better: let it be asked, or set the environment variable)")
	fl.BoolVar(&opts.noTest, "no-test", false, "write without a test call")
	return cmd
}

// runSetup runs `hermes setup`.
func runSetup(ctx context.Context, opts *setupOptions) error {
	home, err := opts.app.ResolveHome()
	if err != nil {
		return err
	}
	in := bufio.NewReader(opts.io.In)
	w := opts.io.ErrOut
	ask := func(q, def string) (string, error) {
		if def != "" {
			fmt.Fprintf(w, "%s [%s]: ", q, def)
		} else {
			fmt.Fprintf(w, "%s: ", q)
		}
		line, err := in.ReadString('\n')
		if err != nil && !(errors.Is(err, io.EOF) && line != "") {
			if errors.Is(err, io.EOF) {
				fmt.Fprintln(w)
				return def, nil
			}
			return "", err
		}
		if v := strings.TrimSpace(line); v != "" {
			return v, nil
		}
		return def, nil
	}
	var names []string
	for _, p := range setupProviders {
		names = append(names, p.name)
	}
	if opts.provider == "" {
		if opts.provider, err = ask("Provider ("+strings.Join(names, ", ")+")", "openai"); err != nil {
			return err
		}
	}
	var p setupProvider
	for _, c := range setupProviders {
		if c.name == strings.ToLower(opts.provider) {
			p = c
		}
	}
	if k, ok := catalog.Lookup(opts.provider); p.name == "" && ok {
		// Any provider of the catalog (hermes model list), with its endpoint,
		// key variable and first model.
		p = setupProvider{name: k.ID, baseURL: k.BaseURL, model: k.DefaultModel()}
		for i, e := range k.KeyEnv {
			if i == 0 || os.Getenv(e) != "" {
				p.keyEnv = e
			}
			if os.Getenv(e) != "" {
				break
			}
		}
	}
	if p.name == "" {
		msg := fmt.Sprintf("provider %q: choose one of %s, or a provider of hermes model list", opts.provider, strings.Join(names, ", "))
		if s := catalog.Suggest(opts.provider); len(s) > 0 {
			msg += " (did you mean " + strings.Join(s, " or ") + "?)"
		}
		return errors.New(msg)
	}
	if opts.baseURL == "" && (p.name == "local" || p.baseURL != "") {
		if opts.baseURL, err = ask("Base URL of the API", p.baseURL); err != nil {
			return err
		}
	}
	if opts.model == "" {
		if opts.model, err = ask("Model", p.model); err != nil {
			return err
		}
	}
	if opts.model == "" {
		return errors.New("a model is needed (the name your server serves, e.g. gemma-3-270m)")
	}
	if opts.key == "" && p.keyEnv != "" {
		if opts.key = os.Getenv(p.keyEnv); opts.key == "" {
			if opts.key, err = ask("API key (stored in "+filepath.Join(home, ".env")+")", ""); err != nil {
				return err
			}
		}
	}
	cfg := llm.Config{Provider: p.name, BaseURL: opts.baseURL, APIKey: opts.key}
	if p.name == "local" {
		cfg.Provider = ""
	}
	if !opts.noTest {
		fmt.Fprintf(w, "testing %s with a one-word question… ", opts.model)
		if err := testCall(ctx, cfg, opts.model); err != nil {
			fmt.Fprintln(w, "failed")
			return fmt.Errorf("the test call failed: %w (nothing was written; run hermes setup again, or --no-test to write it anyway)", err)
		}
		fmt.Fprintln(w, "ok")
	}
	if err := config.Set(home, "model.default", opts.model); err != nil {
		return err
	}
	if cfg.Provider != "" {
		if err := config.Set(home, "model.provider", cfg.Provider); err != nil {
			return err
		}
	}
	if opts.baseURL != "" {
		if err := config.Set(home, "model.base_url", opts.baseURL); err != nil {
			return err
		}
	}
	if opts.key != "" && p.keyEnv != "" {
		if err := config.SetDotEnv(home, p.keyEnv, opts.key); err != nil {
			return err
		}
	}
	fmt.Fprintf(opts.io.Out, "wrote %s", filepath.Join(home, "config.yaml"))
	if opts.key != "" && p.keyEnv != "" {
		fmt.Fprintf(opts.io.Out, " and %s (%s)", filepath.Join(home, ".env"), p.keyEnv)
	}
	fmt.Fprintln(opts.io.Out, "\nnext: hermes chat")
	return nil
}

// testCall asks the model for one word: it proves the address, the key
// and the model name.
func testCall(ctx context.Context, c llm.Config, name string) error {
	p, err := llm.New(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	_, err = p.Complete(ctx, model.Request{Model: name, NoTools: true, MaxTokens: 16,
		Messages: []schema.Message{{Role: "user", Content: "Reply with the single word OK."}}}, func(model.Delta) {})
	return err
}
