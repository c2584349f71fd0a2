package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/hooks"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// hooksTestOptions are the flags and arguments of `hermes hooks test`.
type hooksTestOptions struct {
	app         *app.Factory
	io          app.IOStreams
	event       string
	forTool     string
	payloadFile string
}

func hooksTestCmd(g *app.Factory) *cobra.Command {
	opts := &hooksTestOptions{app: g}
	cmd := &cobra.Command{
		Use: "test EVENT", Short: "Fire the configured hooks of EVENT once with a sample payload (as a real firing shapes it) and show what each answered", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io, opts.event = ioOf(cmd), args[0]
			return runHooksTest(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.forTool, "for-tool", "", "the tool of a tool event (only hooks whose matcher fits it fire)")
	cmd.Flags().StringVar(&opts.payloadFile, "payload-file", "", "a JSON object whose fields replace the sample payload's")
	return cmd
}

// runHooksTest runs `hermes hooks test`.
func runHooksTest(ctx context.Context, opts *hooksTestOptions) error {
	_, c, _, err := hooksSetup(opts.app)
	if err != nil {
		return err
	}
	if !isHookEvent(opts.event) {
		return fmt.Errorf("unknown hook event %q; the events are %s", opts.event, strings.Join(hooks.Events, ", "))
	}
	extra := map[string]any{}
	for k, v := range samplePayloads[opts.event] {
		extra[k] = v
	}
	if opts.payloadFile != "" {
		data, err := os.ReadFile(opts.payloadFile)
		if err != nil {
			return err
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("%s: not a JSON object: %v", opts.payloadFile, err)
		}
		for k, v := range m {
			extra[k] = v
		}
	}
	tool := opts.forTool
	if tool == "" && (opts.event == hooks.PreToolCall || opts.event == hooks.PostToolCall || opts.event == hooks.TransformToolResult) {
		tool = "terminal"
	}
	wd, _ := os.Getwd()
	// Testing is the person's own explicit act: no consent is asked.
	r, err := hooks.New(c.Hooks, hooks.Options{Dir: wd, Log: zerolog.Nop()})
	if err != nil {
		return err
	}
	res := r.Test(ctx, opts.event, tool, extra)
	out := opts.io.Out
	if len(res) == 0 {
		fmt.Fprintf(out, "No hooks configured for %s", opts.event)
		if opts.forTool != "" {
			fmt.Fprintf(out, " whose matcher fits %s", opts.forTool)
		}
		fmt.Fprintln(out, ".")
		return nil
	}
	failed := 0
	for _, x := range res {
		fmt.Fprintf(out, "→ %s\n", x.Name)
		printHookResult(out, x)
		if x.Err != nil {
			failed++
		}
	}
	if failed > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d of %d hooks failed", failed, len(res))}
	}
	return nil
}

func isHookEvent(e string) bool {
	for _, k := range hooks.Events {
		if k == e {
			return true
		}
	}
	return false
}

func printHookResult(out interface{ Write([]byte) (int, error) }, x hooks.Result) {
	fmt.Fprintf(out, "    exit %d in %s\n", x.ExitCode, x.Duration.Round(1e6))
	if s := strings.TrimSpace(x.Stdout); s != "" {
		fmt.Fprintf(out, "    stdout: %s\n", clipLine(s, 400))
	}
	if x.Err != nil {
		fmt.Fprintf(out, "    ✗ %v\n", x.Err)
		return
	}
	if x.Decision == "none" {
		fmt.Fprintln(out, "    decision: none (the hook said nothing that changes the turn)")
		return
	}
	fmt.Fprintf(out, "    decision: %s: %s\n", x.Decision, clipLine(x.Text, 400))
}

func clipLine(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
