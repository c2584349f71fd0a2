package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/model/catalog"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// modelOptions are the flags of `hermes model`, the picker.
type modelOptions struct {
	app *app.Factory
	io  app.IOStreams
	// interactive: stdin is a person at a terminal, who is asked.
	interactive bool
}

// modelCmd is `hermes model`: the picker, and its list and set
// subcommands for scripts.
func modelCmd(g *app.Factory) *cobra.Command {
	opts := &modelOptions{app: g}
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Choose the provider and model (a picker at a terminal; list and set for scripts)",
		Long: "Choose the provider and model chats use: at a terminal, pick from the catalog of providers and their models;\n" +
			"the choice goes into config.yaml (model.provider, model.default, model.base_url), keeping the rest of the file.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.interactive = stdinTerminal(opts.io)
			return runModel(cmd.Context(), opts)
		},
	}
	cmd.AddCommand(modelListCmd(g), modelSetCmd(g))
	return cmd
}

// runModel runs the picker, or shows the current choice when no one is
// there to pick.
func runModel(ctx context.Context, opts *modelOptions) error {
	home, err := opts.app.ResolveHome()
	if err != nil {
		return err
	}
	cur, err := config.Load(home)
	if err != nil {
		return err
	}
	provider, name := first(cur.Model.Provider, cur.Provider), cur.Model.Name
	if !opts.interactive {
		fmt.Fprintf(opts.io.Out, "provider  %s\nmodel     %s\nbase_url  %s\n\nhermes model list shows the providers and models; hermes model set PROVIDER/MODEL chooses one.\n",
			orDash(provider), orDash(name), orDash(first(cur.Model.BaseURL, cur.BaseURL)))
		return nil
	}
	choice, err := pickModel(opts.io.In, opts.io.Out, provider, name)
	if err != nil {
		return err
	}
	return writeModelChoice(opts.io.Out, home, choice)
}

// pickModel asks for a provider and then one of its models, from numbered
// lists; names are accepted as well as numbers, and a model the catalog
// does not list can be typed in.
func pickModel(in io.Reader, out io.Writer, curProvider, curModel string) (config.ModelChoice, error) {
	r := bufio.NewReader(in)
	all := catalog.All()
	fmt.Fprintf(out, "Current: %s / %s\n\nProviders:\n", orDash(curProvider), orDash(curModel))
	for i, p := range all {
		fmt.Fprintf(out, "  %2d. %-20s %-34s %s\n", i+1, p.ID, p.Label, keyStatus(p))
	}
	var p catalog.Provider
	for {
		ans, err := ask(r, out, "Provider (number or name): ")
		if err != nil {
			return config.ModelChoice{}, err
		}
		if n, err := strconv.Atoi(ans); err == nil && n >= 1 && n <= len(all) {
			p = all[n-1]
			break
		}
		if found, ok := catalog.Lookup(ans); ok {
			p = found
			break
		}
		msg := fmt.Sprintf("%q is not a provider", ans)
		if s := catalog.Suggest(ans); len(s) > 0 {
			msg += " (did you mean " + strings.Join(s, " or ") + "?)"
		}
		fmt.Fprintln(out, msg)
	}
	base := p.BaseURL
	if p.Local || p.NeedsBaseURL {
		prompt := fmt.Sprintf("Base URL [%s]: ", base)
		if base == "" {
			prompt = "Base URL: "
		}
		for {
			ans, err := ask(r, out, prompt)
			if err != nil {
				return config.ModelChoice{}, err
			}
			if ans != "" {
				base = ans
			}
			if base != "" || !p.NeedsBaseURL {
				break
			}
			fmt.Fprintf(out, "%s has no default endpoint: type its URL\n", p.ID)
		}
	}
	var m string
	if len(p.Models) > 0 {
		fmt.Fprintf(out, "\n%s models:\n", p.Label)
		for i, mo := range p.Models {
			fmt.Fprintf(out, "  %2d. %-44s %s\n", i+1, mo.ID, modelFacts(mo))
		}
	}
	def := p.DefaultModel()
	if def == "" && strings.EqualFold(p.ID, curProvider) {
		def = curModel
	}
	prompt := "Model (number or name): "
	if def != "" {
		prompt = fmt.Sprintf("Model (number or name) [%s]: ", def)
	}
	for m == "" {
		ans, err := ask(r, out, prompt)
		if err != nil {
			return config.ModelChoice{}, err
		}
		switch n, err := strconv.Atoi(ans); {
		case ans == "":
			m = def
		case err == nil && n >= 1 && n <= len(p.Models):
			m = p.Models[n-1].ID
		case err == nil && len(p.Models) > 0:
			fmt.Fprintf(out, "choose 1 to %d, or type a model's name\n", len(p.Models))
		default:
			m = ans
		}
		if m == "" && def == "" && ans == "" {
			fmt.Fprintln(out, "type the model's name (the server's /models lists them)")
		}
	}
	return config.ModelChoice{Provider: p.ID, Model: m, BaseURL: base, APIMode: p.Mode}, nil
}

// ask prompts and reads one trimmed line; the input ending is an error,
// so that a script that runs out of answers does not loop.
func ask(r *bufio.Reader, out io.Writer, prompt string) (string, error) {
	fmt.Fprint(out, prompt)
	line, err := r.ReadString('\n')
	switch {
	case err == nil || (errors.Is(err, io.EOF) && line != ""):
		return strings.TrimSpace(line), nil
	case errors.Is(err, io.EOF):
		fmt.Fprintln(out)
		return "", errors.New("no choice made: the input ended")
	}
	return "", err
}

// writeModelChoice writes c to home's config.yaml and says what it did,
// and what is missing before a chat can use it.
func writeModelChoice(out io.Writer, home string, c config.ModelChoice) error {
	if err := config.SetModel(home, c); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: model.provider = %s, model.default = %s, model.base_url = %s\n",
		filepath.Join(home, "config.yaml"), c.Provider, c.Model, orDash(c.BaseURL))
	if p, ok := catalog.Lookup(c.Provider); ok && p.NeedsKey() && !keySet(p) {
		fmt.Fprintf(out, "%s needs a key: set %s (or put it in %s) before chatting\n", p.ID, p.KeyVars(), filepath.Join(home, ".env"))
	}
	return nil
}

// keySet reports whether one of p's key variables is set.
func keySet(p catalog.Provider) bool {
	for _, k := range p.KeyEnv {
		if os.Getenv(k) != "" {
			return true
		}
	}
	return false
}

// keyStatus says what p needs for a key and whether it is there.
func keyStatus(p catalog.Provider) string {
	switch {
	case p.Mode == model.ModeBedrock:
		return "AWS credentials"
	case p.Local && len(p.KeyEnv) == 0:
		return "local, no key"
	case p.Local:
		return "local, key optional (" + p.KeyVars() + ")"
	case len(p.KeyEnv) == 0:
		return "no key variable"
	case keySet(p):
		return p.KeyVars() + " ✓"
	}
	return p.KeyVars()
}

// modelFacts is a model's context window and price, "unknown" where the
// catalog does not know them.
func modelFacts(m catalog.Model) string {
	ctx := "context unknown"
	if m.Window > 0 {
		ctx = tokensShort(m.Window) + " context"
	}
	price := "price unknown"
	if m.Price != nil {
		price = fmt.Sprintf("$%s in / $%s out per Mtok", dollars(m.Price.Input), dollars(m.Price.Output))
	}
	return ctx + ", " + price
}

func tokensShort(n int) string {
	switch {
	case n >= 1_000_000:
		return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.2f", float64(n)/1e6), "0"), ".0") + "M"
	case n >= 1000:
		return fmt.Sprintf("%dk", n/1000)
	}
	return strconv.Itoa(n)
}

func dollars(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
