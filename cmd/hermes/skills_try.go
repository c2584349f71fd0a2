package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/internal/udiff"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

// skillsTryOptions are the flags and arguments of `hermes skills try`.
type skillsTryOptions struct {
	app  *app.Factory
	io   app.IOStreams
	ov   config.Overrides
	name string
	file string
	on   []string
	json bool
}

// skillsTryCmd is `hermes skills try`.
func skillsTryCmd(g *app.Factory) *cobra.Command {
	opts := &skillsTryOptions{app: g}
	cmd := &cobra.Command{
		Use:   "try NAME --file SKILL.md|DIR --on SESSION [--on SESSION…]",
		Short: "Try a new version of a skill on past sessions: each is forked before its first message and its messages sent again with the new version (live model), the old and new conversations shown side by side",
		Long: `Each session named with --on is forked at its first user message (the fork is a session of its own,
with the original as its parent) and its user messages are sent again, one by one, to the model, with
the skill's version from --file in place of the library's (a SKILL.md, or a skill's directory with its
linked files). The library itself is not changed. For each message the old and new turns are shown:
the tools called, the answer (with a diff when it changed) and the cost.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.io = ioOf(cmd)
			opts.name = args[0]
			return runSkillsTry(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.file, "file", "", "the new version: a SKILL.md, or a skill's directory")
	fl.StringArrayVar(&opts.on, "on", nil, "a session to try it on (an id or a unique prefix; repeat for more)")
	fl.BoolVar(&opts.json, "json", false, "print the comparison as JSON")
	fl.StringVarP(&opts.ov.Model, "model", "m", "", "model name")
	fl.StringVar(&opts.ov.Provider, "provider", "", "provider name")
	fl.StringVar(&opts.ov.BaseURL, "base-url", "", "API base URL")
	return cmd
}

// tryTurn is one user message's turn, as it went and as it goes now.
type tryTurn struct {
	Message string   `json:"message"`
	Tools   []string `json:"tools"`
	Answer  string   `json:"answer"`
	CostUSD float64  `json:"cost_usd"`
	Error   string   `json:"error,omitempty"`
}

// tryResult is one session tried.
type tryResult struct {
	Session string    `json:"session"`
	Fork    string    `json:"fork"`
	Before  []tryTurn `json:"before"`
	After   []tryTurn `json:"after"`
}

// runSkillsTry runs `hermes skills try`.
func runSkillsTry(ctx context.Context, opts *skillsTryOptions) error {
	if opts.file == "" || len(opts.on) == 0 {
		return fmt.Errorf("say which version to try (--file SKILL.md or a skill's directory) and on which sessions (--on SESSION)")
	}
	overlay, err := os.MkdirTemp("", "hermes-skills-try-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(overlay)
	if err := stageSkill(opts.file, opts.name, filepath.Join(overlay, opts.name)); err != nil {
		return err
	}
	// The sessions are resolved first (ids or prefixes), with the
	// projections caught up, before the chat that runs the forks opens.
	var ids []string
	for _, arg := range opts.on {
		if err := withSession(ctx, opts.app, arg, func(_ *app.App, s sessions.Summary) error {
			ids = append(ids, s.ID)
			return nil
		}); err != nil {
			return err
		}
	}
	app.OverlaySkills(overlay)
	c, err := newChatter(opts.app, opts.ov, nil)
	if err != nil {
		return err
	}
	defer c.Stop()
	var results []tryResult
	for _, id := range ids {
		r, err := trySession(ctx, c, id, opts.name)
		if err != nil {
			return fmt.Errorf("session %s: %w", id, err)
		}
		results = append(results, r)
	}
	if opts.json {
		enc := json.NewEncoder(opts.io.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	}
	for _, r := range results {
		printTry(opts.io.Out, opts.name, r)
	}
	return nil
}

// stageSkill puts the version to try at dir: file's directory (a SKILL.md
// beside its linked files) or the SKILL.md alone, after checking it is a
// skill named name.
func stageSkill(file, name, dir string) error {
	src, md := file, file
	if fi, err := os.Stat(file); err != nil {
		return err
	} else if fi.IsDir() {
		md = filepath.Join(file, "SKILL.md")
	} else {
		src = ""
	}
	data, err := os.ReadFile(md)
	if err != nil {
		return fmt.Errorf("--file: %w", err)
	}
	sk, err := skills.Parse(string(data))
	if err != nil {
		return fmt.Errorf("--file %s: %w", md, err)
	}
	if sk.Name != "" && sk.Name != name {
		return fmt.Errorf("--file %s is skill %q, not %q", md, sk.Name, name)
	}
	if src != "" {
		return os.CopyFS(dir, os.DirFS(src))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "SKILL.md"), data, 0o644)
}

// trySession forks session id before its first user message and sends its
// user messages again, one turn each.
func trySession(ctx context.Context, c *chatter, id, skill string) (tryResult, error) {
	rs, err := c.App.Store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
	if err != nil {
		return tryResult{}, err
	}
	before, first := turnsOf(rs)
	if len(before) == 0 {
		return tryResult{}, fmt.Errorf("it has no user message to send again")
	}
	if first == 0 {
		return tryResult{}, fmt.Errorf("its first event is a message: nothing to fork before it")
	}
	fork, err := session.Fork(ctx, c.App.Store, id, first-1)
	if err != nil {
		return tryResult{}, err
	}
	_ = c.Mgr.Retitle(ctx, fork, fmt.Sprintf("try %s on %.8s", skill, id))
	res := tryResult{Session: id, Fork: fork, Before: before}
	at := fork
	for _, t := range before {
		r := c.Mgr.RunTurn(ctx, at, &session.Turn{ID: uuid.NewString(), Text: t.Message})
		if r.SessionID != "" {
			at = r.SessionID // a compression moved the conversation on
		}
		if r.Err != nil {
			res.After = append(res.After, tryTurn{Message: t.Message, Error: r.Err.Error()})
			continue
		}
		res.After = append(res.After, tryTurn{Message: t.Message, Answer: r.Answer})
	}
	// Tools and costs of the new turns, from the fork's events.
	frs, err := c.App.Store.ReadStream(ctx, events.SessionStream(fork), events.Forward, 0, 0)
	if err != nil {
		return res, err
	}
	after, _ := turnsOf(frs)
	for i := range res.After {
		if i < len(after) {
			res.After[i].Tools, res.After[i].CostUSD = after[i].Tools, after[i].CostUSD
		}
	}
	return res, nil
}

// turnsOf reads a session's turns from its events: each user message with
// the tools called, the last answer and the cost until the next one, and
// the revision of the first user message.
func turnsOf(rs []events.Recorded) ([]tryTurn, uint64) {
	var out []tryTurn
	var first uint64
	for _, r := range rs {
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			continue
		}
		switch e := p.(type) {
		case schema.UserMessageAdded:
			if len(out) == 0 {
				first = r.Revision
			}
			out = append(out, tryTurn{Message: e.Content, Tools: []string{}})
		case schema.ToolCallStarted:
			if len(out) > 0 {
				out[len(out)-1].Tools = append(out[len(out)-1].Tools, e.Name)
			}
		case schema.AssistantMessageAdded:
			if len(out) > 0 {
				t := &out[len(out)-1]
				t.CostUSD += e.CostUSD
				if strings.TrimSpace(e.Content) != "" {
					t.Answer = e.Content
				}
			}
		}
	}
	return out, first
}

// printTry prints one session's comparison.
func printTry(w io.Writer, skill string, r tryResult) {
	fmt.Fprintf(w, "session %s, tried with the new %s in fork %s:\n", r.Session, skill, r.Fork)
	var was, is float64
	for i, b := range r.Before {
		a := tryTurn{}
		if i < len(r.After) {
			a = r.After[i]
		}
		was, is = was+b.CostUSD, is+a.CostUSD
		fmt.Fprintf(w, "\n> %s\n", oneLine(b.Message, 200))
		fmt.Fprintf(w, "  before: tools [%s], $%.4f\n", strings.Join(b.Tools, ", "), b.CostUSD)
		if a.Error != "" {
			fmt.Fprintf(w, "  after:  failed: %s\n", a.Error)
			continue
		}
		fmt.Fprintf(w, "  after:  tools [%s], $%.4f\n", strings.Join(a.Tools, ", "), a.CostUSD)
		if b.Answer == a.Answer {
			fmt.Fprintf(w, "  the same answer: %s\n", oneLine(a.Answer, 200))
			continue
		}
		for _, l := range strings.Split(strings.TrimRight(udiff.Unified("before", "after", b.Answer+"\n", a.Answer+"\n", 2), "\n"), "\n") {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	fmt.Fprintf(w, "\ncost: $%.4f before, $%.4f after\n\n", was, is)
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
