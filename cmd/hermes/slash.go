package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/projections/lineage"
	"github.com/hermes-go/hermes/projections/sessions"
)

// What the slash commands of the chat screen and plain chat share: the
// chat's own settings (/personality, /verbose), the numbered session list
// (/sessions), and the texts of /config, /copy, /model and /insights.

// chatPrefs are what a chat's slash commands set for the chat alone.
type chatPrefs struct {
	// persona is the personality taken on (/personality), named
	// personaName; "" for none.
	persona, personaName string
	// tools is how tool calls show (/verbose).
	tools toolView
	// listed are the sessions /sessions numbered last, 1 first.
	listed []string
	// resend is a message /retry took back, for plain chat to send again.
	resend string
}

// verbosity is how a chat shows tool calls, as Hermes' /verbose cycles
// them.
type verbosity int32

const (
	toolsAll     verbosity = iota // every call as it starts and ends (the default)
	toolsVerbose                  // and its arguments and result in full
	toolsOff                      // none
	toolsNew                      // a call only when its tool differs from the one before
)

// verbosityCycle is the order /verbose alone goes through, as Hermes'.
var verbosityCycle = []verbosity{toolsOff, toolsNew, toolsAll, toolsVerbose}

func (v verbosity) String() string {
	return map[verbosity]string{toolsAll: "all", toolsVerbose: "verbose", toolsOff: "off", toolsNew: "new"}[v]
}

// describe says what v shows.
func (v verbosity) describe() string {
	return map[verbosity]string{
		toolsAll:     "tool calls show as they start and end",
		toolsVerbose: "tool calls show with their arguments and results in full",
		toolsOff:     "tool calls do not show",
		toolsNew:     "a tool call shows when its tool differs from the one before",
	}[v]
}

// toolView filters the tool observations a chat shows; /verbose sets its
// mode while turns run.
type toolView struct {
	mode atomic.Int32
	mu   sync.Mutex
	last string          // the tool shown last (new)
	hid  map[string]bool // calls whose start was hidden: their end is too
}

// Mode is how tool calls show now.
func (v *toolView) Mode() verbosity { return verbosity(v.mode.Load()) }

// set reads arg (a mode, or "" for the next in Hermes' cycle) and sets it.
func (v *toolView) set(arg string) (verbosity, error) {
	cur := v.Mode()
	next := cur
	switch arg {
	case "":
		for i, m := range verbosityCycle {
			if m == cur {
				next = verbosityCycle[(i+1)%len(verbosityCycle)]
			}
		}
	case "off", "new", "all", "verbose":
		for _, m := range verbosityCycle {
			if m.String() == arg {
				next = m
			}
		}
	default:
		return cur, fmt.Errorf("usage: /verbose [off|new|all|verbose] (now %s)", cur)
	}
	v.mode.Store(int32(next))
	return next, nil
}

// observer passes to next what the mode shows; in verbose mode, detail
// gets each call's arguments and result in full.
func (v *toolView) observer(next agent.Observer, detail func(string)) agent.Observer {
	return func(o agent.Observation) {
		if o.Kind != agent.ObserveToolStart && o.Kind != agent.ObserveToolEnd {
			next(o)
			return
		}
		mode := v.Mode()
		v.mu.Lock()
		show := true
		switch {
		case mode == toolsOff:
			show = false
		case mode == toolsNew && o.Kind == agent.ObserveToolStart:
			show = o.Tool != v.last
			if show {
				v.last = o.Tool
			} else {
				if v.hid == nil {
					v.hid = map[string]bool{}
				}
				v.hid[o.ID] = true
			}
		case o.Kind == agent.ObserveToolEnd && v.hid[o.ID]:
			delete(v.hid, o.ID)
			show = false
		}
		v.mu.Unlock()
		if !show {
			return
		}
		next(o)
		if mode == toolsVerbose && detail != nil {
			switch {
			case o.Kind == agent.ObserveToolStart && o.Text != "":
				detail(fmt.Sprintf("%s arguments: %s", o.Tool, clip(o.Text, 4000)))
			case o.Kind == agent.ObserveToolEnd && o.Err != "":
				detail(fmt.Sprintf("%s failed: %s", o.Tool, clip(o.Err, 4000)))
			case o.Kind == agent.ObserveToolEnd && o.Text != "":
				detail(fmt.Sprintf("%s result: %s", o.Tool, clip(o.Text, 4000)))
			}
		}
	}
}

// osc52 is the terminal escape that puts text on the clipboard (OSC 52),
// which terminals honour through SSH and tmux too.
func osc52(text string) string {
	return "\x1b]52;c;" + base64.StdEncoding.EncodeToString([]byte(text)) + "\a"
}

// nthAnswer is the n-th last answer (1: the last) of the conversation
// session id holds, as the next model call sees it.
func nthAnswer(ctx context.Context, a *app.App, id string, n int) (string, error) {
	if err := a.Fresh(ctx); err != nil {
		return "", err
	}
	msgs, err := history.Messages(ctx, a.ProjDB.Reader(), id)
	if err != nil {
		return "", err
	}
	seen := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "assistant" && strings.TrimSpace(msgs[i].Content) != "" {
			if seen++; seen == n {
				return msgs[i].Content, nil
			}
		}
	}
	if seen == 0 {
		return "", errors.New("no answer to copy yet")
	}
	return "", fmt.Errorf("the conversation has %d answers, not %d", seen, n)
}

// copyArg reads /copy's argument: which answer, counted from the last.
func copyArg(arg string) (int, error) {
	if arg == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(arg)
	if err != nil || n < 1 {
		return 0, errors.New("usage: /copy [N], N the answer counted from the last (1)")
	}
	return n, nil
}

// sessionsListed is how many conversations /sessions numbers.
const sessionsListed = 15

// listSessions numbers the recent conversations for /sessions, marking the
// one current belongs to, and keeps their sessions in p.listed.
func (p *chatPrefs) listSessions(ctx context.Context, a *app.App, current string) (string, error) {
	if err := a.Fresh(ctx); err != nil {
		return "", err
	}
	db := a.ProjDB.Reader()
	list, err := sessions.List(ctx, db, 0)
	if err != nil {
		return "", err
	}
	nodes, err := lineage.Dump(ctx, db)
	if err != nil {
		return "", err
	}
	convs, _ := conversations(list, nodes)
	if len(convs) == 0 {
		return "no conversations yet", nil
	}
	more := len(convs) - sessionsListed
	convs = convs[:min(len(convs), sessionsListed)]
	p.listed = p.listed[:0]
	var b strings.Builder
	b.WriteString("recent conversations (/sessions N continues number N):")
	for i, c := range convs {
		p.listed = append(p.listed, c.ID)
		mark := " "
		if c.ID == current || contains(c.Branches, current) {
			mark = "*"
		}
		title := first(c.Title, "(untitled)")
		if n := len(c.Branches); n > 0 {
			title += fmt.Sprintf(" (+%d %s)", n, plural(n, "branch", "branches"))
		}
		fmt.Fprintf(&b, "\n %s%2d. %s  %s · %s · %d messages · %s", mark, i+1, clip(title, 50), short(c.ID), c.Source, c.Messages,
			c.LastActive.Local().Format(time.DateTime))
	}
	if more > 0 {
		fmt.Fprintf(&b, "\n  … and %d older (hermes sessions list shows them all)", more)
	}
	return b.String(), nil
}

// pick is the session of number arg in the last /sessions list.
func (p *chatPrefs) pick(arg string) (string, error) {
	n, err := strconv.Atoi(arg)
	if err != nil || n < 1 {
		return "", errors.New("usage: /sessions [N], N a number /sessions showed (/resume ID takes an id)")
	}
	if n > len(p.listed) {
		if len(p.listed) == 0 {
			return "", errors.New("/sessions first, to number the conversations")
		}
		return "", fmt.Errorf("/sessions showed %d conversations, not %d", len(p.listed), n)
	}
	return p.listed[n-1], nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// personality runs /personality: alone, it lists them; with a name, it
// takes that one on; none (or default, neutral) drops it.
func (p *chatPrefs) personality(file config.Config, arg string) (string, error) {
	all := file.Personalities()
	name := strings.ToLower(strings.TrimSpace(arg))
	switch name {
	case "":
		var b strings.Builder
		b.WriteString("personalities (/personality NAME takes one on for this chat; none drops it):")
		mark := func(n string) string {
			if n == p.personaName {
				return "*"
			}
			return " "
		}
		fmt.Fprintf(&b, "\n %s none  no personality", mark(""))
		for _, n := range file.PersonalityNames() {
			fmt.Fprintf(&b, "\n %s %s  %s", mark(n), n, clip(firstLine(all[n].Summary()), 70))
		}
		if len(file.Agent.Personalities) == 0 {
			b.WriteString("\n(built-in ones: name yours under agent.personalities in config.yaml)")
		}
		return b.String(), nil
	case "none", "default", "neutral":
		p.persona, p.personaName = "", ""
		return "no personality from the next turn", nil
	}
	per, ok := all[name]
	if !ok {
		return "", fmt.Errorf("no personality %q: there are none, %s", name, strings.Join(file.PersonalityNames(), ", "))
	}
	p.persona, p.personaName = per.Prompt(), name
	return fmt.Sprintf("personality %s from the next turn, for this chat: %q", name, clip(firstLine(per.Prompt()), 60)), nil
}

// modelsText is /model alone: the model in use, and the ones the
// configuration names to switch to.
func modelsText(cfg config.Resolved, file config.Config, current string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "model: %s", first(current, cfg.Model))
	if current != "" && current != cfg.Model {
		fmt.Fprintf(&b, " (switched; the configured one is %s)", cfg.Model)
	}
	var others []string
	add := func(m string) {
		if m != "" && m != first(current, cfg.Model) && !contains(others, m) {
			others = append(others, m)
		}
	}
	add(cfg.Model)
	add(file.Model.Name)
	for _, m := range cfg.FallbackModels {
		add(m)
	}
	add(cfg.AuxModel)
	if len(others) > 0 {
		fmt.Fprintf(&b, "\nconfigured: %s", strings.Join(others, ", "))
	}
	b.WriteString("\n/model NAME switches this chat from the next turn")
	return b.String()
}

// configText is /config: config show's lines, then what this chat changed.
func configText(home string, cfg config.Resolved, model string, p *chatPrefs) (string, error) {
	var b strings.Builder
	if err := showConfig(&b, home); err != nil {
		return "", err
	}
	fmt.Fprintf(&b, "# this chat: model %s, personality %s, tool calls %s", first(model, cfg.Model), first(p.personaName, "none"), p.tools.Mode())
	return b.String(), nil
}

// insightsArg reads /insights' argument: a number of days (30).
func insightsArg(arg string) (int, error) {
	if arg == "" {
		return 30, nil
	}
	n, err := strconv.Atoi(arg)
	if err != nil || n < 1 {
		return 0, errors.New("usage: /insights [DAYS], a number of days (30)")
	}
	return n, nil
}

// profileText is /profile: the home the chat runs in, and where its parts
// are.
func profileText(home string) string {
	return fmt.Sprintf("home %s (HERMES_HOME or --home chooses another)\n  config   %s\n  memories %s\n  skills   %s",
		home, filepath.Join(home, "config.yaml"), filepath.Join(home, "memories"), filepath.Join(home, "skills"))
}

// modelArg reads /model's argument: a model name, and --global to save it
// in config.yaml too (where a model: mapping keeps its provider).
func modelArg(arg string) (name string, global bool, err error) {
	for _, f := range strings.Fields(arg) {
		switch {
		case f == "--global":
			global = true
		case strings.HasPrefix(f, "-") || name != "":
			return "", false, errors.New("usage: /model [NAME] [--global]")
		default:
			name = f
		}
	}
	if global && name == "" {
		return "", false, errors.New("usage: /model NAME --global")
	}
	return name, global, nil
}

// switchModel is what /model NAME says, saving it first with --global.
func switchModel(home, name string, global bool) (string, error) {
	if !global {
		return "model: " + name + " (from the next turn)", nil
	}
	if err := config.Set(home, "model", name); err != nil {
		return "", err
	}
	return fmt.Sprintf("model: %s (from the next turn, and saved in %s)", name, filepath.Join(home, "config.yaml")), nil
}
