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
	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/adapters/llm"
	"github.com/hermes-go/hermes/adapters/tui"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/schema"
)

// onTerminal reports whether the chat has a person at a terminal: standard
// input and output are terminals that can show a screen. Otherwise the
// chat reads plain lines (scripts, pipes, TERM=dumb).
func onTerminal(cmd *cobra.Command) bool {
	in, ok := cmd.InOrStdin().(*os.File)
	if !ok || !isatty.IsTerminal(in.Fd()) {
		return false
	}
	out, ok := cmd.OutOrStdout().(*os.File)
	if !ok || !isatty.IsTerminal(out.Fd()) {
		return false
	}
	return os.Getenv("TERM") != "dumb"
}

// chatCommands are the interactive chat's slash commands, as /help lists
// them and Tab completes them.
var chatCommands = []tui.Command{
	{Name: "/help", Help: "list the commands"},
	{Name: "/new", Help: "start a new session"},
	{Name: "/resume", Args: "ID", Help: "continue session ID (or a unique prefix)"},
	{Name: "/undo", Args: "[N]", Help: "take back the last N turns (1): the chat goes on in a fork made before them; the message comes back to edit"},
	{Name: "/retry", Help: "take back the last turn and send its message again"},
	{Name: "/branch", Args: "[TITLE]", Help: "fork the session here and go on in the fork (the original stays)"},
	{Name: "/title", Args: "[TEXT]", Help: "show or set the session's title"},
	{Name: "/history", Help: "show the conversation so far"},
	{Name: "/save", Args: "[FILE]", Help: "export the session's events as JSON lines (hermes sessions import reads them)"},
	{Name: "/status", Help: "session, model, tokens, cost and settings"},
	{Name: "/usage", Help: "tokens and cost of the conversation"},
	{Name: "/tools", Help: "the tools the agent has"},
	{Name: "/skills", Help: "the skills it can load"},
	{Name: "/model", Args: "[NAME]", Help: "show or change the model (from the next turn)"},
	{Name: "/yolo", Help: "approve dangerous commands without asking (again: ask)"},
	{Name: "/reasoning", Args: "[show|hide]", Help: "show or hide the model's thinking", Words: []string{"hide", "show"}},
	{Name: "/queue", Args: "TEXT", Help: "send TEXT after the current turn, without interrupting it"},
	{Name: "/background", Args: "TEXT", Help: "run TEXT as a separate session in the background"},
	{Name: "/compress", Args: "[--force]", Help: "compress the conversation now (--force: even a short one)", Words: []string{"--force"}},
	{Name: "/stop", Help: "stop the turn in flight"},
	{Name: "/exit", Help: "leave (Ctrl-D)"},
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
}

type bgResult struct {
	id   string
	text string
	res  session.TurnResult
}

func runScreenChat(cmd *cobra.Command, g *globals, f *chatFlags) error {
	home, err := g.resolveHome()
	if err != nil {
		return err
	}
	hist, err := tui.LoadHistory(filepath.Join(home, "history"))
	if err != nil {
		g.log.Warn().Err(err).Msg("the input history is not available")
		hist, _ = tui.LoadHistory("")
	}
	scr := tui.New(tui.Options{In: cmd.InOrStdin(), Out: cmd.OutOrStdout(), History: hist, Commands: chatCommands,
		Color: os.Getenv("NO_COLOR") == "", Env: os.Environ()})
	screenDone := make(chan error, 1)
	go func() { screenDone <- scr.Run() }()
	// Diagnostics go above the prompt, not across the screen.
	g.log = g.log.Output(zerolog.ConsoleWriter{Out: screenLog{scr}, NoColor: true, PartsExclude: []string{zerolog.TimestampFieldName}})

	sc := &screenChat{scr: scr, results: make(chan session.TurnResult, 8), bg: make(chan bgResult, 8), titles: make(chan [2]string, 8)}
	ov := f.ov
	sc.yolo, ov.Yolo = ov.Yolo, false // per turn: /yolo switches it
	c, err := newChatter(g, ov, scr, func(d *session.Deps, provider model.Provider, cfg Resolved) {
		if cfg.AutoTitle {
			d.Title = titler(provider, cfg, func(id, title string) { sc.titles <- [2]string{id, title} })
		}
	})
	if err != nil {
		scr.Close()
		<-screenDone
		return err
	}
	defer c.stop()
	sc.c = c
	ctx := cmd.Context()
	sc.ctx = ctx
	var id string
	if f.resume != "" || f.cont {
		id, err = c.findResumable(ctx, f.resume, f.cont)
	} else {
		id, err = c.newSession(ctx, f.source)
	}
	if err == nil {
		_, err = c.mgr.Session(ctx, id)
	}
	if err != nil {
		scr.Close()
		<-screenDone
		return err
	}
	sc.id, sc.at = id, id
	sc.title = sessionTitle(ctx, c.a.store, id)
	scr.Info(fmt.Sprintf("Hermes · %s · session %s · /help lists the commands, Tab completes them, Ctrl-R searches what you typed", c.cfg.Model, id))
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
			sc.c.mgr.Stop(sc.id, "user exited")
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
					sc.c.mgr.Stop(sc.id, "the terminal closed")
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
					sc.c.mgr.Stop(sc.id, "interrupted by Ctrl-C")
				}
			case tui.Submit:
				text := strings.TrimSpace(ev.Text)
				if isCommand(text) {
					if sc.slash(text) {
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
				sc.scr.Observe(agent.Observation{Kind: "delta", Text: b.res.Answer})
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
				sc.c.mgr.Stop(sc.id, "interrupted by SIGINT")
			}
		}
	}
}

// isCommand tells a slash command from a message that starts with a
// path ("/etc/hosts is empty"): a command's name holds one slash.
func isCommand(text string) bool {
	f := strings.Fields(text)
	return len(f) > 0 && strings.HasPrefix(f[0], "/") && strings.Count(f[0], "/") == 1 && len(f[0]) > 1
}

// send sends a message: while a turn runs, it interrupts it and is answered
// next (as Hermes does); /queue waits instead.
func (sc *screenChat) send(text string) {
	sc.scr.Echo(text)
	sc.last = text
	if sc.running == 0 {
		sc.scr.Busy("thinking")
	}
	sc.running++
	id, model, yolo := sc.id, sc.model, sc.yolo
	go func() {
		sc.results <- sc.c.mgr.RunTurn(context.Background(), id, &session.Turn{Text: text, Observe: sc.scr.Observe, Model: model, Yolo: yolo})
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
	parts := []string{first(sc.model, sc.c.cfg.Model), "session " + short(sc.at)}
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
	if _, err := sc.c.mgr.Session(sc.ctx, id); err != nil {
		return err
	}
	prev := sc.id
	sc.id, sc.at = id, id
	if prev != id {
		sc.c.mgr.Restart(prev)
	}
	sc.title = sessionTitle(sc.ctx, sc.c.a.store, id)
	sc.status()
	return nil
}

var errBusy = errors.New("a turn is running: wait for it, or stop it with Ctrl-C or /stop, then try again")

// slash runs a slash command; true means leave.
func (sc *screenChat) slash(line string) bool {
	fields := strings.Fields(line)
	name, rest := fields[0], strings.TrimSpace(strings.TrimPrefix(line, fields[0]))
	ctx := sc.ctx
	var err error
	switch name {
	case "/exit", "/quit":
		return true
	case "/help":
		sc.scr.Info("commands:\n" + sc.scr.Commands() + "\nkeys: Enter sends · Alt-Enter or Ctrl-J starts a new line · Up/Down and Ctrl-R go through what you typed · Tab completes a command · Ctrl-C stops a turn · Ctrl-D leaves")
	case "/new":
		if sc.running > 0 {
			err = errBusy
			break
		}
		var id string
		if id, err = sc.c.newSession(ctx, "cli"); err == nil {
			if err = sc.switchTo(id); err == nil {
				sc.scr.Info("session: " + id)
			}
		}
	case "/resume":
		if len(fields) != 2 {
			err = errors.New("usage: /resume ID")
			break
		}
		if sc.running > 0 {
			err = errBusy
			break
		}
		var id string
		if id, err = sc.c.findResumable(ctx, fields[1], false); err == nil {
			if err = sc.switchTo(id); err == nil {
				sc.scr.Info("session: " + id)
			}
		}
	case "/stop":
		if sc.running > 0 {
			sc.c.mgr.Stop(sc.id, "user sent /stop")
		}
	case "/undo":
		n := 1
		if rest != "" {
			if n, err = strconv.Atoi(rest); err != nil || n < 1 {
				err = errors.New("usage: /undo [N], N a number of turns")
				break
			}
		}
		var text string
		if text, err = sc.undo(n); err == nil {
			sc.scr.Prefill(text)
		}
	case "/retry":
		var text string
		if text, err = sc.undo(1); err == nil {
			sc.send(text)
		}
	case "/branch":
		err = sc.branch(rest)
	case "/title":
		if rest == "" {
			if sc.title == "" {
				sc.scr.Info("untitled: sessions list names it after its first message until a title is set (or generated after the first answer)")
			} else {
				sc.scr.Info("title: " + sc.title)
			}
			break
		}
		if err = sc.c.mgr.Retitle(ctx, sc.id, rest); err == nil {
			sc.title = rest
			sc.scr.Info("title: " + rest)
			sc.status()
		}
	case "/history":
		err = sc.history()
	case "/save":
		err = sc.save(rest)
	case "/status":
		err = sc.showStatus()
	case "/usage":
		var u convUsage
		if u, err = usageOf(ctx, sc.c.a.store, sc.at, sc.c.cfg.Prices); err == nil {
			sc.scr.Info(fmt.Sprintf("session %s: %s", sc.at, u))
		}
	case "/tools":
		sc.scr.Info(fmt.Sprintf("%d tools: %s", len(sc.c.tools), strings.Join(sc.c.tools, ", ")))
	case "/skills":
		all, problems := library(sc.c.a.home, sc.c.wd).All()
		for _, p := range problems {
			sc.scr.Error("skill: " + p.Error())
		}
		if len(all) == 0 {
			sc.scr.Info("no skills yet: hermes skills install PATH adds one, and the agent can write its own")
			break
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d skills:", len(all))
		for _, s := range all {
			fmt.Fprintf(&b, "\n  %s — %s", s.Name, clip(s.Description, 80))
		}
		sc.scr.Info(b.String())
	case "/model":
		if rest == "" {
			sc.scr.Info("model: " + first(sc.model, sc.c.cfg.Model))
			break
		}
		sc.model = rest
		sc.scr.Info("model: " + rest + " (from the next turn)")
		sc.status()
	case "/yolo":
		sc.yolo = !sc.yolo
		if sc.yolo {
			sc.scr.Info("YOLO on: dangerous commands run without asking from the next turn (hard-line ones stay blocked); /yolo again to ask")
		} else {
			sc.scr.Info("YOLO off: dangerous commands ask first")
		}
		sc.status()
	case "/reasoning":
		switch rest {
		case "show", "on":
			sc.scr.ShowReasoning(true)
			sc.scr.Info("the model's thinking is shown as it streams")
		case "hide", "off", "":
			sc.scr.ShowReasoning(false)
			sc.scr.Info("the model's thinking is hidden (it is recorded: /history and sessions show have it); /reasoning show shows it")
		default:
			err = errors.New("usage: /reasoning show|hide (the reasoning effort is the provider's default in this build)")
		}
	case "/queue":
		if rest == "" {
			err = errors.New("usage: /queue TEXT")
			break
		}
		if sc.running == 0 {
			sc.send(rest)
			break
		}
		sc.queue = append(sc.queue, rest)
		sc.scr.Info(fmt.Sprintf("queued (%d): sent when the current turn ends", len(sc.queue)))
		sc.status()
	case "/background", "/bg":
		if rest == "" {
			err = errors.New("usage: /background TEXT")
			break
		}
		var id string
		if id, err = sc.c.newSession(ctx, "cli"); err != nil {
			break
		}
		sc.bgRunning++
		sc.scr.Info(fmt.Sprintf("background session %s started; its answer shows here when it ends (hermes chat --resume %s continues it)", id, id))
		model, yolo := sc.model, sc.yolo
		go func() {
			res := sc.c.mgr.RunTurn(context.Background(), id, &session.Turn{Text: rest, Model: model, Yolo: yolo})
			sc.c.mgr.Restart(id)
			sc.bg <- bgResult{id: id, text: rest, res: res}
		}()
		sc.status()
	case "/compress":
		if sc.running > 0 {
			err = errBusy
			break
		}
		force := rest == "--force"
		if rest != "" && !force {
			err = errors.New("usage: /compress [--force]")
			break
		}
		sc.scr.Busy("compressing")
		var next string
		next, err = sc.c.mgr.CompressNow(ctx, sc.id, session.CompressNow{Model: sc.model, Force: force})
		sc.scr.Idle()
		if err == nil {
			sc.scr.Info("compressed: the conversation continues in session " + next)
			sc.at = next
			sc.status()
		}
	default:
		err = fmt.Errorf("unknown command %s: /help lists them", name)
	}
	if err != nil {
		sc.scr.Error("error: " + err.Error())
	}
	return false
}

// undo takes back the last n turns: the chat goes on in a fork made at the
// event before the n-th last message, which is returned. Turns before a
// compression are found in the session it continued from.
func (sc *screenChat) undo(n int) (string, error) {
	if sc.running > 0 {
		return "", errBusy
	}
	ctx := sc.ctx
	// Walk back through the messages, newest first, across compressions;
	// with fewer than n, take back all there are.
	var at events.Recorded
	from, found := "", 0
	for s := sc.at; s != "" && found < n; {
		rs, err := sc.c.a.store.ReadStream(ctx, events.SessionStream(s), events.Forward, 0, 0)
		if err != nil {
			return "", err
		}
		parent := ""
		var users []events.Recorded
		for _, r := range rs {
			switch r.Type {
			case schema.TypeUserMessageAdded:
				users = append(users, r)
			case schema.TypeSessionStarted:
				if p, err := schema.Decode(r.Envelope); err == nil && p.(schema.SessionStarted).Reason == schema.StartCompression {
					parent = p.(schema.SessionStarted).ParentSessionID
				}
			}
		}
		for i := len(users) - 1; i >= 0 && found < n; i-- {
			at, from = users[i], s
			found++
		}
		s = parent
	}
	if found == 0 {
		return "", errors.New("nothing to undo: no message was sent in this session yet")
	}
	n = found
	p, err := schema.Decode(at.Envelope)
	if err != nil {
		return "", err
	}
	text := p.(schema.UserMessageAdded).Content
	fork, err := session.Fork(ctx, sc.c.a.store, from, at.Revision-1)
	if err != nil {
		return "", err
	}
	prev, title := sc.at, sc.title
	if err := sc.switchTo(fork); err != nil {
		return "", err
	}
	if title != "" {
		if err := sc.c.mgr.Retitle(ctx, fork, title); err == nil {
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
	rs, err := sc.c.a.store.ReadStream(ctx, events.SessionStream(sc.at), events.Backward, events.End, 1)
	if err != nil {
		return err
	}
	if len(rs) == 0 {
		return fmt.Errorf("no session %s", sc.at)
	}
	fork, err := session.Fork(ctx, sc.c.a.store, sc.at, rs[0].Revision)
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
		if err := sc.c.mgr.Retitle(ctx, fork, title); err != nil {
			return err
		}
		sc.title = title
		sc.status()
	}
	sc.scr.Info(fmt.Sprintf("branched: the chat goes on in session %s; the original %s stays as it was (/resume %s goes back)", fork, prev, short(prev)))
	return nil
}

// history shows the conversation as the next model call starts from it.
func (sc *screenChat) history() error {
	if err := sc.c.a.fresh(sc.ctx); err != nil {
		return err
	}
	msgs, err := history.Messages(sc.ctx, sc.c.a.projDB.Reader(), sc.at)
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
	n, err := session.Export(sc.ctx, sc.c.a.store, sc.at, f)
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
	u, err := usageOf(sc.ctx, sc.c.a.store, sc.at, sc.c.cfg.Prices)
	if err != nil {
		return err
	}
	model := first(sc.model, sc.c.cfg.Model)
	lines := []string{
		"session   " + sc.at,
		"title     " + first(sc.title, "(untitled)"),
		fmt.Sprintf("model     %s (%s)", model, first(sc.c.cfg.LLM.Provider, "openai")),
		"usage     " + u.String(),
		fmt.Sprintf("yolo      %v", sc.yolo),
		fmt.Sprintf("queued    %d; background sessions running %d", len(sc.queue), sc.bgRunning),
		"directory " + sc.c.wd,
		"home      " + sc.c.a.home,
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
func titler(main model.Provider, cfg Resolved, told func(session, title string)) func(context.Context, string, string, string) (string, schema.AuxiliaryCallCompleted, error) {
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
