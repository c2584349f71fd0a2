package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/command"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/review"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/adapters/llm"
	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/adapters/tui"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/schema"
)

// onTerminal reports whether the chat has a person at a terminal: standard
// input and output are terminals that can show a screen. Otherwise the
// chat reads plain lines (scripts, pipes, TERM=dumb).
func onTerminal(s app.IOStreams) bool {
	in, ok := s.In.(*os.File)
	if !ok || !isatty.IsTerminal(in.Fd()) {
		return false
	}
	out, ok := s.Out.(*os.File)
	if !ok || !isatty.IsTerminal(out.Fd()) {
		return false
	}
	return os.Getenv("TERM") != "dumb"
}

// screenCommands are the chat screen's slash commands from the command
// table, as Tab completes them; /model completes models too.
func screenCommands(models ...string) []tui.Command {
	var cs []tui.Command
	for _, c := range command.Screen.Commands() {
		words := c.Words
		if c.ID == command.Model {
			words = append(words, models...)
		}
		cs = append(cs, tui.Command{Name: c.Name, Help: c.Help, Words: words})
	}
	return cs
}

// configuredModels are the models config.yaml names (model, fallbacks,
// the auxiliary one), for /model to complete.
func configuredModels(file config.Config) []string {
	var ms []string
	for _, m := range append([]string{file.Model.Name, file.Auxiliary.Compression.Name}, fallbackNames(file)...) {
		if m != "" && !contains(ms, m) {
			ms = append(ms, m)
		}
	}
	return ms
}

func fallbackNames(file config.Config) []string {
	var ms []string
	for _, f := range file.FallbackProviders {
		ms = append(ms, f.Name)
	}
	return ms
}

// screenChat is the interactive chat on a terminal: the screen shows, the
// chat decides. Only its run goroutine touches its fields.
type screenChat struct {
	c   *chatter
	scr *tui.Screen
	ctx context.Context
	// id is the session the chat runs (its actor); at is where its
	// conversation is now: after a compression, the child session the
	// actor writes to.
	id, at string
	model  string
	yolo   bool
	title  string

	running   int // turns of this chat not ended
	results   chan session.TurnResult
	queue     []string
	bg        chan bgResult
	bgRunning int
	titles    chan [2]string
	last      string // the last message sent (/retry)
	// observe shows a turn's progress as /verbose says.
	observe func(agent.Observation)
	// attach are --image files, sent with the first message.
	attach []schema.ImageRef
}

type bgResult struct {
	id   string
	text string
	res  session.TurnResult
}

func runScreenChat(ctx context.Context, g *app.Factory, f *chatFlags) error {
	home, err := g.ResolveHome()
	if err != nil {
		return err
	}
	hist, err := tui.LoadHistory(filepath.Join(home, "history"))
	if err != nil {
		g.Log.Warn().Err(err).Msg("the input history is not available")
		hist, _ = tui.LoadHistory("")
	}
	file, _ := g.Config() // a bad file is reported when the chat is wired, below
	// New hooks are asked about before the screen takes the terminal.
	app.AskHooksFirst(g, home, file)
	scr := tui.New(tui.Options{In: f.io.In, Out: f.io.Out, History: hist, Commands: screenCommands(configuredModels(file)...),
		Color: os.Getenv("NO_COLOR") == "", Env: os.Environ()})
	screenDone := make(chan error, 1)
	go func() { screenDone <- scr.Run() }()
	// Diagnostics go above the prompt, not across the screen.
	g.Log = g.Log.Output(zerolog.ConsoleWriter{Out: screenLog{scr}, NoColor: true, PartsExclude: []string{zerolog.TimestampFieldName}})

	sc := &screenChat{scr: scr, results: make(chan session.TurnResult, 8), bg: make(chan bgResult, 8), titles: make(chan [2]string, 8)}
	ov := f.ov
	sc.yolo, ov.Yolo = ov.Yolo, false // per turn: /yolo switches it
	c, err := newChatter(g, ov, scr, func(d *session.Deps, provider model.Provider, cfg config.Resolved) {
		d.IdleAfter = -1 // the screen keeps its session while open, as plain chat does
		if cfg.AutoTitle {
			d.Title = titler(provider, cfg, func(id, title string) { sc.titles <- [2]string{id, title} })
		}
	})
	if err != nil {
		scr.Close()
		<-screenDone
		return err
	}
	defer c.Stop()
	sc.c = c
	sc.ctx = ctx
	// A background review's note goes above the prompt, while the screen
	// is up (Stop waits for reviews after it is gone).
	c.OnReview(func(r review.Finished) { scr.Info("review: " + r.Note) })
	defer c.OnReview(nil)
	sc.observe = c.prefs.tools.observer(scr.Observe, func(s string) { scr.Info("    " + s) })
	if sc.attach, err = storeImageFiles(ctx, c.App.Blobs(), f.images); err != nil {
		scr.Close()
		<-screenDone
		return err
	}
	var id string
	if f.resume != "" || f.cont {
		id, err = c.findResumable(ctx, f.resume, f.cont)
	} else {
		id, err = c.newSession(ctx, f.source)
	}
	if err == nil {
		_, err = c.Mgr.Session(ctx, id)
	}
	if err != nil {
		scr.Close()
		<-screenDone
		return err
	}
	sc.id, sc.at = id, id
	defer func() { c.Hooks.SessionFinalized(context.WithoutCancel(ctx), sc.id, "shutdown") }()
	sc.title = sessionTitle(ctx, c.App.Store, id)
	scr.Info(fmt.Sprintf("Hermes · %s · session %s · /help lists the commands, Tab completes them, Ctrl-R searches what you typed", c.Cfg.Model, id))
	if f.resume != "" || f.cont {
		scr.Settle()
		if err := sc.recap(recapExchanges); err != nil {
			scr.Error("the conversation so far cannot be shown: " + err.Error())
		}
	}
	sc.status()
	err = sc.run(screenDone)
	return err
}

// screenLog writes log lines above the prompt.
type screenLog struct{ scr *tui.Screen }

func (w screenLog) Write(p []byte) (int, error) {
	w.scr.Info(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// run is the chat's loop: what the person does, turns ending, background
// sessions ending, titles arriving.
func (sc *screenChat) run(screenDone <-chan error) error {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	events := sc.scr.Events()
	leave := func() error {
		if sc.running > 0 {
			sc.c.Mgr.Stop(sc.id, "user exited")
			for ; sc.running > 0; sc.running-- {
				<-sc.results
			}
		}
		sc.scr.Close()
		return <-screenDone
	}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				// the screen ended (the terminal went away)
				if sc.running > 0 {
					sc.c.Mgr.Stop(sc.id, "the terminal closed")
					for ; sc.running > 0; sc.running-- {
						<-sc.results
					}
				}
				return <-screenDone
			}
			switch ev.Kind {
			case tui.Exit:
				return leave()
			case tui.Interrupt:
				if sc.running > 0 {
					sc.c.Mgr.Stop(sc.id, "interrupted by Ctrl-C")
				}
			case tui.Submit:
				text := strings.TrimSpace(ev.Text)
				if cmd, arg, ok := command.Screen.Parse(text); ok {
					if sc.slash(cmd, arg) {
						return leave()
					}
					continue
				}
				sc.send(ev.Text)
			}
		case res := <-sc.results:
			sc.ended(res)
		case b := <-sc.bg:
			sc.bgRunning--
			sc.scr.Info(fmt.Sprintf("── background session %s (%q) ended", b.id, clip(b.text, 40)))
			switch {
			case b.res.Err != nil:
				sc.scr.Error(fmt.Sprintf("   %v", b.res.Err))
			default:
				sc.scr.Observe(agent.Observation{Kind: agent.ObserveDelta, Text: b.res.Answer})
				sc.scr.EndAnswer()
			}
			sc.status()
		case t := <-sc.titles:
			if t[0] == sc.id || t[0] == sc.at {
				sc.title = t[1]
				sc.status()
			}
		case s := <-sigs:
			if s == syscall.SIGTERM {
				return leave()
			}
			if sc.running > 0 {
				sc.c.Mgr.Stop(sc.id, "interrupted by SIGINT")
			}
		}
	}
}

// send sends a message: while a turn runs, it interrupts it and is answered
// next (as Hermes does); /queue waits instead.
func (sc *screenChat) send(text string) { sc.sendTurn(text, text, nil) }

// sendTurn sends text, shown as echo; loaded are the skills text loads
// (/<skill-name>). An audio file the text names is sent as its words.
func (sc *screenChat) sendTurn(echo, text string, loaded []string) {
	var imgs []schema.ImageRef
	var err error
	if loaded == nil {
		var heard []string
		text, heard, err = lineAudio(sc.ctx, app.Transcriber(sc.c.Cfg), text)
		if err != nil {
			sc.scr.Error("error: " + err.Error())
			return
		}
		for _, h := range heard {
			sc.scr.Info("heard: " + h)
		}
		imgs, err = lineImages(sc.ctx, sc.c.App.Blobs(), text)
	}
	if err != nil {
		sc.scr.Error("error: " + err.Error())
		return
	}
	imgs, sc.attach = append(sc.attach, imgs...), nil
	sc.scr.Echo(echo)
	for _, im := range imgs {
		sc.scr.Info(fmt.Sprintf("image: %s (%s, %d bytes)", im.Name, im.MediaType, im.Size))
	}
	sc.last = echo
	if sc.running == 0 {
		sc.scr.Busy("thinking")
	}
	sc.running++
	id, model, yolo, persona := sc.id, sc.model, sc.yolo, sc.c.prefs.persona
	go func() {
		sc.results <- sc.c.Mgr.RunTurn(context.Background(), id, &session.Turn{Text: text, Images: imgs, Observe: sc.observe, Model: model, Yolo: yolo, Persona: persona, Skills: loaded})
	}()
}

// ended shows how a turn ended.
func (sc *screenChat) ended(res session.TurnResult) {
	sc.running--
	sc.scr.EndAnswer()
	if res.SessionID != "" && res.SessionID != sc.at {
		sc.scr.Info(fmt.Sprintf("session: %s (the conversation continues there after compression)", res.SessionID))
		sc.at = res.SessionID
	}
	switch {
	case errors.Is(res.Err, agent.ErrInterrupted):
		sc.scr.Info("[interrupted]")
	case res.Err != nil:
		sc.scr.Error("error: " + res.Err.Error())
	}
	if sc.running > 0 {
		return
	}
	sc.scr.Idle()
	if res.Err == nil {
		if outcome, n := sc.c.outcome(sc.ctx, sc.at, res.TurnID); outcome == agent.OutcomeBudget {
			sc.scr.Error(fmt.Sprintf("the iteration budget ran out after %d model calls: the answer above is the model's summary of where it stopped; raise agent.max_turns or --max-turns, or say \"go on\"", n))
		}
	}
	if len(sc.queue) > 0 {
		next := sc.queue[0]
		sc.queue = sc.queue[1:]
		sc.send(next)
	}
	sc.status()
}

// status refreshes the line under the prompt.
func (sc *screenChat) status() {
	parts := []string{first(sc.model, sc.c.Cfg.Model), "session " + short(sc.at)}
	if sc.title != "" {
		parts = append(parts, "“"+clip(sc.title, 40)+"”")
	}
	if sc.yolo {
		parts = append(parts, "YOLO")
	}
	if n := len(sc.queue); n > 0 {
		parts = append(parts, fmt.Sprintf("%d queued", n))
	}
	if sc.bgRunning > 0 {
		parts = append(parts, fmt.Sprintf("%d in background", sc.bgRunning))
	}
	sc.scr.SetStatus(strings.Join(parts, " · "))
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// switchTo makes id the chat's session, letting the one it leaves go (its
// lease: another process may resume it).
func (sc *screenChat) switchTo(id string) error {
	if _, err := sc.c.Mgr.Session(sc.ctx, id); err != nil {
		return err
	}
	prev := sc.id
	sc.id, sc.at = id, id
	if prev != id {
		sc.c.Mgr.Restart(prev)
	}
	sc.title = sessionTitle(sc.ctx, sc.c.App.Store, id)
	sc.status()
	return nil
}

var errBusy = errors.New("a turn is running: wait for it, or stop it with Ctrl-C or /stop, then try again")

// errLeave is what /exit's handler returns: the chat ends.
var errLeave = errors.New("leave")

// slash runs a slash command; true means leave.
func (sc *screenChat) slash(cmd *command.Command, rest string) bool {
	run := sc.handler(cmd)
	if run == nil {
		run = func(string) error { return fmt.Errorf("%s %w", cmd.Name, errNoHandler) }
	}
	err := run(rest)
	if errors.Is(err, errLeave) {
		return true
	}
	if err != nil {
		sc.scr.Error("error: " + err.Error())
	}
	return false
}

// handler is what the chat screen does for cmd, run with the rest of the
// line: nil for a command the table offers the screen that no case here
// handles, which a test walking the table catches.
func (sc *screenChat) handler(cmd *command.Command) func(rest string) error {
	switch cmd.ID {
	case command.Unknown:
		// /<skill-name> (or a bundle's name) loads skills into a turn.
		return func(rest string) error {
			// A command of another surface is never a skill's name.
			if unknown := command.Screen.Unknown(cmd.Name); unknown.Elsewhere != 0 || sc.c == nil {
				return unknown
			}
			inv, err := sc.c.invokeSkill(sc.id, "cli", cmd.Name, rest)
			if errors.Is(err, skills.ErrNoSkill) {
				return command.Screen.Unknown(cmd.Name)
			}
			if err != nil {
				return err
			}
			sc.sendTurn(strings.TrimSpace(cmd.Name+" "+rest), inv.Text, inv.Skills)
			sc.scr.Info(loadedNote(inv))
			return nil
		}
	case command.Exit:
		return func(string) error { return errLeave }
	case command.Help:
		return func(string) error {
			sc.scr.Info("commands:\n" + command.Screen.Help() + "\nkeys: Enter sends · Alt-Enter or Ctrl-J starts a new line · Up/Down and Ctrl-R go through what you typed · Tab completes a command · Ctrl-C stops a turn · Ctrl-D leaves")
			return nil
		}
	case command.New:
		return func(title string) error {
			if sc.running > 0 {
				return errBusy
			}
			old := sc.id
			sc.c.Hooks.SessionFinalized(sc.ctx, old, "new")
			if err := sc.enter(sc.c.newSession(sc.ctx, "cli")); err != nil {
				return err
			}
			sc.c.Hooks.SessionReset(sc.ctx, old, sc.id)
			if title == "" {
				return nil
			}
			if err := sc.c.Mgr.Retitle(sc.ctx, sc.id, title); err != nil {
				return err
			}
			sc.title = title
			sc.status()
			return nil
		}
	case command.Clear:
		return func(string) error {
			if sc.running > 0 {
				return errBusy
			}
			prev := sc.at
			id, err := sc.c.newSession(sc.ctx, "cli")
			if err != nil {
				return err
			}
			if err := sc.switchTo(id); err != nil {
				return err
			}
			sc.scr.Clear()
			sc.scr.Info(fmt.Sprintf("Hermes · %s · session %s · the conversation before is kept: /sessions lists it, /resume %s goes back",
				first(sc.model, sc.c.Cfg.Model), id, short(prev)))
			return nil
		}
	case command.Sessions:
		return func(arg string) error {
			if arg == "" {
				list, err := sc.c.prefs.listSessions(sc.ctx, sc.c.App, sc.at)
				if err != nil {
					return err
				}
				sc.scr.Info(list)
				return nil
			}
			id, err := sc.c.prefs.pick(arg)
			if err != nil {
				return err
			}
			if sc.running > 0 {
				return errBusy
			}
			return sc.enter(id, nil)
		}
	case command.Config:
		return func(string) error {
			text, err := configText(sc.c.App.Home, sc.c.Cfg, sc.model, &sc.c.prefs)
			if err != nil {
				return err
			}
			sc.scr.Info(text)
			return nil
		}
	case command.Copy:
		return func(arg string) error {
			n, err := copyArg(arg)
			if err != nil {
				return err
			}
			text, err := nthAnswer(sc.ctx, sc.c.App, sc.at, n)
			if err != nil {
				return err
			}
			sc.scr.Copy(text)
			sc.scr.Info(fmt.Sprintf("copied %d characters (through the terminal: OSC 52)", len(text)))
			return nil
		}
	case command.Personality:
		return func(arg string) error {
			msg, err := sc.c.prefs.personality(sc.c.File, arg)
			if err != nil {
				return err
			}
			sc.scr.Info(msg)
			return nil
		}
	case command.Verbose:
		return func(arg string) error {
			v, err := sc.c.prefs.tools.set(arg)
			if err != nil {
				return err
			}
			sc.scr.Info(fmt.Sprintf("verbose %s: %s", v, v.describe()))
			return nil
		}
	case command.Bundles:
		return func(string) error {
			sc.scr.Info(bundlesText(sc.c.App.Home))
			return nil
		}
	case command.Memory:
		return func(arg string) error {
			text, err := memoryCommand(sc.ctx, sc.c.App.Home, sc.c.App.Store, "cli", arg)
			if err != nil {
				return err
			}
			sc.scr.Info(text)
			return nil
		}
	case command.Insights:
		return func(arg string) error {
			days, err := insightsArg(arg)
			if err != nil {
				return err
			}
			in, err := insightsOf(sc.ctx, sc.c.App, days, time.Now())
			if err != nil {
				return err
			}
			sc.scr.Info(in.String())
			return nil
		}
	case command.Version:
		return func(string) error {
			sc.scr.Info(versionLine())
			return nil
		}
	case command.Profile:
		return func(string) error {
			sc.scr.Info(profileText(sc.c.App.Home))
			return nil
		}
	case command.Redraw:
		return func(string) error {
			sc.scr.Redraw()
			return nil
		}
	case command.Resume:
		return func(rest string) error {
			if len(strings.Fields(rest)) != 1 {
				return errors.New("usage: /resume ID")
			}
			if sc.running > 0 {
				return errBusy
			}
			return sc.enter(sc.c.findResumable(sc.ctx, rest, false))
		}
	case command.Stop:
		return func(string) error {
			if sc.running > 0 {
				sc.c.Mgr.Stop(sc.id, "user sent /stop")
			}
			return nil
		}
	case command.Undo:
		return func(rest string) error {
			n := 1
			if rest != "" {
				var err error
				if n, err = strconv.Atoi(rest); err != nil || n < 1 {
					return errors.New("usage: /undo [N], N a number of turns")
				}
			}
			text, err := sc.undo(n)
			if err != nil {
				return err
			}
			sc.scr.Prefill(text)
			return nil
		}
	case command.Retry:
		return func(string) error {
			text, err := sc.undo(1)
			if err != nil {
				return err
			}
			sc.send(text)
			return nil
		}
	case command.Branch:
		return sc.branch
	case command.Title:
		return func(rest string) error {
			if rest == "" {
				if sc.title == "" {
					sc.scr.Info("untitled: sessions list names it after its first message until a title is set (or generated after the first answer)")
				} else {
					sc.scr.Info("title: " + sc.title)
				}
				return nil
			}
			if err := sc.c.Mgr.Retitle(sc.ctx, sc.id, rest); err != nil {
				return err
			}
			sc.title = rest
			sc.scr.Info("title: " + rest)
			sc.status()
			return nil
		}
	case command.History:
		return func(string) error { return sc.history() }
	case command.Save:
		return sc.save
	case command.Status:
		return func(string) error { return sc.showStatus() }
	case command.Usage:
		return func(string) error {
			u, err := usageOf(sc.ctx, sc.c.App.Store, sc.at, sc.c.Cfg.Prices)
			if err != nil {
				return err
			}
			sc.scr.Info(fmt.Sprintf("session %s: %s", sc.at, u))
			return nil
		}
	case command.Tools:
		return func(string) error {
			sc.scr.Info(fmt.Sprintf("%d tools: %s", len(sc.c.Tools), strings.Join(sc.c.Tools, ", ")))
			return nil
		}
	case command.Plugins:
		return func(string) error {
			sc.scr.Info(pluginsReport(sc.c.Plugins))
			return nil
		}
	case command.Skills:
		return func(string) error {
			lib := app.Library(sc.c.App.Home, sc.c.WD)
			all, problems := lib.All()
			_, excluded := lib.Offered(sc.c.skillWhere("cli", sc.c.Tools))
			for _, p := range problems {
				sc.scr.Error("skill: " + p.Error())
			}
			if len(all) == 0 {
				sc.scr.Info("no skills yet: hermes skills install PATH adds one, and the agent can write its own")
				return nil
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%d skills (/NAME loads one into a turn):", len(all))
			for _, s := range all {
				name := s.Name
				if cat := lib.Category(s); cat != "" {
					name = cat + "/" + name
				}
				fmt.Fprintf(&b, "\n  %s — %s", name, clip(s.Description, 80))
				if why := excluded[s.Name]; why != "" {
					fmt.Fprintf(&b, " (not offered here: %s)", why)
				}
			}
			sc.scr.Info(b.String())
			return nil
		}
	case command.Model:
		return func(rest string) error {
			name, global, err := modelArg(rest)
			if err != nil {
				return err
			}
			if name == "" {
				sc.scr.Info(modelsText(sc.c.Cfg, sc.c.File, sc.model))
				return nil
			}
			msg, err := switchModel(sc.c.App.Home, name, global)
			if err != nil {
				return err
			}
			sc.model = name
			sc.scr.Info(msg)
			sc.status()
			return nil
		}
	case command.Yolo:
		return func(string) error {
			sc.yolo = !sc.yolo
			if sc.yolo {
				sc.scr.Info("YOLO on: dangerous commands run without asking from the next turn (hard-line ones stay blocked); /yolo again to ask")
			} else {
				sc.scr.Info("YOLO off: dangerous commands ask first")
			}
			sc.status()
			return nil
		}
	case command.Reasoning:
		return func(rest string) error {
			switch rest {
			case "show", "on":
				sc.scr.ShowReasoning(true)
				sc.scr.Info("the model's thinking is shown as it streams")
			case "hide", "off", "":
				sc.scr.ShowReasoning(false)
				sc.scr.Info("the model's thinking is hidden (it is recorded: /history and sessions show have it); /reasoning show shows it")
			default:
				return errors.New("usage: /reasoning show|hide (the reasoning effort is the provider's default in this build)")
			}
			return nil
		}
	case command.Queue:
		return func(rest string) error {
			if rest == "" {
				return errors.New("usage: /queue TEXT")
			}
			if sc.running == 0 {
				sc.send(rest)
				return nil
			}
			sc.queue = append(sc.queue, rest)
			sc.scr.Info(fmt.Sprintf("queued (%d): sent when the current turn ends", len(sc.queue)))
			sc.status()
			return nil
		}
	case command.Background:
		return func(rest string) error {
			if rest == "" {
				return errors.New("usage: /background TEXT")
			}
			id, err := sc.c.newSession(sc.ctx, "cli")
			if err != nil {
				return err
			}
			sc.bgRunning++
			sc.scr.Info(fmt.Sprintf("background session %s started; its answer shows here when it ends (hermes chat --resume %s continues it)", id, id))
			model, yolo := sc.model, sc.yolo
			go func() {
				res := sc.c.Mgr.RunTurn(context.Background(), id, &session.Turn{Text: rest, Model: model, Yolo: yolo})
				sc.c.Mgr.Restart(id)
				sc.bg <- bgResult{id: id, text: rest, res: res}
			}()
			sc.status()
			return nil
		}
	case command.Compress:
		return func(rest string) error {
			if sc.running > 0 {
				return errBusy
			}
			force := rest == "--force"
			if rest != "" && !force {
				return errors.New("usage: /compress [--force]")
			}
			sc.scr.Busy("compressing")
			next, err := sc.c.Mgr.CompressNow(sc.ctx, sc.id, session.CompressNow{Model: sc.model, Force: force})
			sc.scr.Idle()
			if err != nil {
				return err
			}
			sc.scr.Info("compressed: the conversation continues in session " + next)
			sc.at = next
			sc.status()
			return nil
		}
	}
	return nil
}

// enter goes on in session id, unless getting it failed with err, and
// says so.
func (sc *screenChat) enter(id string, err error) error {
	if err != nil {
		return err
	}
	if err := sc.switchTo(id); err != nil {
		return err
	}
	sc.scr.Info("session: " + id)
	return nil
}

// undo takes back the last n turns: the chat goes on in a fork made at the
// event before the n-th last message, which is returned. Turns before a
// compression are found in the session it continued from.
func (sc *screenChat) undo(n int) (string, error) {
	if sc.running > 0 {
		return "", errBusy
	}
	ctx := sc.ctx
	u, err := session.Undo(ctx, sc.c.App.Store, sc.at, n)
	if err != nil {
		return "", err
	}
	fork, from, text := u.Fork, u.From, u.Text
	n = u.Turns
	prev, title := sc.at, sc.title
	if err := sc.switchTo(fork); err != nil {
		return "", err
	}
	if title != "" {
		if err := sc.c.Mgr.Retitle(ctx, fork, title); err == nil {
			sc.title = title
			sc.status()
		}
	}
	sc.scr.Info(fmt.Sprintf("undid %d turn(s): the chat goes on in session %s, a fork of %s made before %q (/resume %s goes back)",
		n, fork, from, clip(firstLine(text), 50), short(prev)))
	return text, nil
}

// branch forks the session at its last event and goes on in the fork.
func (sc *screenChat) branch(title string) error {
	if sc.running > 0 {
		return errBusy
	}
	ctx := sc.ctx
	rs, err := sc.c.App.Store.ReadStream(ctx, events.SessionStream(sc.at), events.Backward, events.End, 1)
	if err != nil {
		return err
	}
	if len(rs) == 0 {
		return fmt.Errorf("no session %s", sc.at)
	}
	fork, err := session.Fork(ctx, sc.c.App.Store, sc.at, rs[0].Revision)
	if err != nil {
		return err
	}
	prev := sc.at
	if title == "" && sc.title != "" {
		title = sc.title + " (branch)"
	}
	if err := sc.switchTo(fork); err != nil {
		return err
	}
	if title != "" {
		if err := sc.c.Mgr.Retitle(ctx, fork, title); err != nil {
			return err
		}
		sc.title = title
		sc.status()
	}
	sc.scr.Info(fmt.Sprintf("branched: the chat goes on in session %s; the original %s stays as it was (/resume %s goes back)", fork, prev, short(prev)))
	return nil
}

// recapExchanges is how many exchanges of a resumed conversation the
// screen shows when it opens.
const recapExchanges = 3

// recapLines bounds each answer of the recap.
const recapLines = 12

// recap shows the last n exchanges (a message and what answered it) of
// the conversation the chat resumes, as they were shown when they
// happened, so that it does not open on an empty screen.
func (sc *screenChat) recap(n int) error {
	if err := sc.c.App.Fresh(sc.ctx); err != nil {
		return err
	}
	msgs, err := history.Messages(sc.ctx, sc.c.App.ProjDB.Reader(), sc.at)
	if err != nil {
		return err
	}
	start, users := len(msgs), 0
	for i := len(msgs) - 1; i >= 0 && users < n; i-- {
		if msgs[i].Role == "user" {
			start, users = i, users+1
		}
	}
	if users == 0 {
		return nil
	}
	earlier := 0
	for _, m := range msgs[:start] {
		if m.Role == "user" {
			earlier++
		}
	}
	if earlier > 0 {
		what := "messages"
		if earlier == 1 {
			what = "message"
		}
		sc.scr.Info(fmt.Sprintf("… %d earlier %s (/history shows the whole conversation)", earlier, what))
	}
	for _, m := range msgs[start:] {
		switch m.Role {
		case "user":
			sc.scr.Echo(m.Content)
		case "assistant":
			for _, tc := range m.ToolCalls {
				sc.scr.Info(fmt.Sprintf("  ⚙ %s %s", tc.Function.Name, clip(tc.Function.Arguments, 80)))
			}
			if text := strings.TrimSpace(m.Content); text != "" {
				// a long answer in part: the recap is to pick up the thread
				lines := strings.Split(text, "\n")
				if len(lines) > recapLines {
					text = strings.Join(lines[:recapLines], "\n") + fmt.Sprintf("\n\n… (%d more lines: /history shows them)", len(lines)-recapLines)
				}
				sc.scr.Answer(text)
			}
		}
	}
	sc.scr.Info("── resumed: the conversation goes on below")
	return nil
}

// history shows the conversation as the next model call starts from it.
func (sc *screenChat) history() error {
	if err := sc.c.App.Fresh(sc.ctx); err != nil {
		return err
	}
	msgs, err := history.Messages(sc.ctx, sc.c.App.ProjDB.Reader(), sc.at)
	if err != nil {
		return err
	}
	var b strings.Builder
	n := 0
	for _, m := range msgs {
		switch m.Role {
		case "system":
			continue
		case "user":
			fmt.Fprintf(&b, "\n› %s", clipLines(m.Content, 6))
		case "assistant":
			if m.Content != "" {
				fmt.Fprintf(&b, "\n  %s", strings.ReplaceAll(clipLines(m.Content, 12), "\n", "\n  "))
			}
			for _, tc := range m.ToolCalls {
				fmt.Fprintf(&b, "\n  ⚙ %s %s", tc.Function.Name, clip(tc.Function.Arguments, 80))
			}
		case "tool":
			fmt.Fprintf(&b, "\n    → %s", clip(firstLine(m.Content), 100))
		}
		n++
	}
	if n == 0 {
		sc.scr.Info("no messages yet")
		return nil
	}
	sc.scr.Info(fmt.Sprintf("session %s, %d messages:%s", sc.at, n, b.String()))
	return nil
}

// save exports the session's events to file (default: a file named after
// the session in the working directory).
func (sc *screenChat) save(file string) error {
	if file == "" {
		file = fmt.Sprintf("hermes-%s-%s.jsonl", short(sc.at), time.Now().Format("20060102-150405"))
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("save: %w", err)
	}
	n, err := session.Export(sc.ctx, sc.c.App.Store, sc.at, f, sc.c.App.Blobs())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(file)
		return err
	}
	abs, _ := filepath.Abs(file)
	sc.scr.Info(fmt.Sprintf("saved %d events of session %s to %s (hermes sessions import %s brings it back)", n, sc.at, abs, file))
	return nil
}

func (sc *screenChat) showStatus() error {
	u, err := usageOf(sc.ctx, sc.c.App.Store, sc.at, sc.c.Cfg.Prices)
	if err != nil {
		return err
	}
	model := first(sc.model, sc.c.Cfg.Model)
	lines := []string{
		"session   " + sc.at,
		"title     " + first(sc.title, "(untitled)"),
		fmt.Sprintf("model     %s (%s)", model, first(sc.c.Cfg.LLM.Provider, "openai")),
		"usage     " + u.String(),
		fmt.Sprintf("yolo      %v", sc.yolo),
		fmt.Sprintf("queued    %d; background sessions running %d", len(sc.queue), sc.bgRunning),
		"directory " + sc.c.WD,
		"home      " + sc.c.App.Home,
	}
	sc.scr.Info(strings.Join(lines, "\n"))
	return nil
}

// sessionTitle is the last title recorded in session id's stream.
func sessionTitle(ctx context.Context, store events.Store, id string) string {
	rs, err := store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
	if err != nil {
		return ""
	}
	title := ""
	for _, r := range rs {
		if r.Type != schema.TypeSessionTitled {
			continue
		}
		if p, err := schema.Decode(r.Envelope); err == nil {
			title = p.(schema.SessionTitled).Title
		}
	}
	return title
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// clipLines keeps the first n lines of s.
func clipLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n… (%d more lines)", len(lines)-n)
	}
	return strings.Join(lines, "\n")
}

// titlePrompt asks the auxiliary model for a session's title.
const titlePrompt = "Name the conversation that begins with the exchange below: a title of three to seven words saying what it is about, " +
	"in the language the user writes in. Answer with the title alone, without quotes, a final full stop or a label such as \"Title:\"."

var thinkBlock = regexp.MustCompile(`(?s)<think(ing)?>.*?(</think(ing)?>|$)`)

// titler generates session titles with the auxiliary model (the main one
// unless auxiliary.compression names another), as Hermes does after a
// session's first exchange; told reports each title made.
func titler(main model.Provider, cfg config.Resolved, told func(session, title string)) func(context.Context, string, string, string) (string, schema.AuxiliaryCallCompleted, error) {
	return func(ctx context.Context, id, user, answer string) (string, schema.AuxiliaryCallCompleted, error) {
		prov, name := main, cfg.Model
		if cfg.AuxModel != "" {
			p, err := llm.New(cfg.Aux)
			if err != nil {
				return "", schema.AuxiliaryCallCompleted{}, err
			}
			prov, name = p, cfg.AuxModel
		}
		resp, err := prov.Complete(ctx, model.Request{Model: name, System: titlePrompt, NoTools: true, MaxTokens: 500,
			Messages: []schema.Message{{Role: "user", Content: "User: " + clip(user, 500) + "\n\nAssistant: " + clip(answer, 500)}}}, func(model.Delta) {})
		if err != nil {
			return "", schema.AuxiliaryCallCompleted{}, err
		}
		title := cleanTitle(resp.Content)
		if title != "" && told != nil {
			told(id, title)
		}
		return title, model.AuxCall("title_generation", prov, name, resp, cfg.Prices), nil
	}
}

// cleanTitle is a model's answer made a title: no thinking, one line, no
// quotes or label, at most 80 characters.
func cleanTitle(s string) string {
	s = strings.TrimSpace(thinkBlock.ReplaceAllString(s, ""))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	s = strings.Trim(strings.TrimSpace(s), "\"'“”*#`")
	if strings.HasPrefix(strings.ToLower(s), "title:") {
		s = strings.TrimSpace(s[len("title:"):])
	}
	s = strings.TrimRight(strings.Trim(s, "\"'“”"), ".")
	return clip(s, 80)
}
