package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/command"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/prompt"
	"github.com/hermes-go/hermes/actors/review"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

// chatFlags are the options of `hermes chat`: its flags, and the Factory
// and streams runChat works with.
type chatFlags struct {
	app      *app.Factory
	io       app.IOStreams
	query    string
	resume   string
	cont     bool
	ov       config.Overrides
	source   string
	quiet    bool
	maxTurns int
	plain    bool
	// images are --image files, sent with -q or the first message.
	images []string
	// audio are --audio files, transcribed into -q's prompt (or sent as
	// the prompt without -q).
	audio []string
}

func chatCmd(g *app.Factory) *cobra.Command {
	f := &chatFlags{}
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Chat with the agent (-q for one turn)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.app, f.io = g, ioOf(cmd)
			return runChat(cmd.Context(), f)
		},
	}
	addChatFlags(cmd.Flags(), f)
	return cmd
}

// addChatFlags defines chat's flags on fl, filling f.
func addChatFlags(fl *pflag.FlagSet, f *chatFlags) {
	fl.StringVarP(&f.query, "query", "q", "", "run one turn with this prompt: the answer goes to stdout, progress to stderr")
	fl.StringVarP(&f.resume, "resume", "r", "", "continue session ID")
	fl.BoolVarP(&f.cont, "continue", "c", false, "continue the most recently active session")
	fl.StringVarP(&f.ov.Model, "model", "m", "", "model name")
	fl.StringVar(&f.ov.Provider, "provider", "", "provider name (openai, anthropic, openrouter, ...)")
	fl.StringVar(&f.ov.BaseURL, "base-url", "", "API base URL")
	fl.StringVar(&f.ov.APIMode, "api-mode", "", "chat_completions, anthropic_messages or codex_responses")
	fl.IntVar(&f.ov.MaxTurns, "max-turns", 0, "iteration budget of a turn (default agent.max_turns or 90)")
	fl.BoolVar(&f.ov.Yolo, "yolo", false, "approve dangerous commands without asking (hard-line ones stay blocked; the sandbox stays as it is)")
	fl.StringVar(&f.ov.Sandbox, "sandbox", "", "sandbox mode over sandbox.mode: read-only, workspace-write or full-access (no containment, with a warning)")
	fl.StringVar(&f.source, "source", "cli", "source recorded on new sessions")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress on stderr")
	fl.BoolVar(&f.plain, "plain", false, "on a terminal too, read plain lines instead of the full-screen editor")
	fl.StringArrayVar(&f.images, "image", nil, "attach an image file (PNG, JPEG, GIF, WebP; repeatable) to -q's prompt or the first message")
	fl.StringArrayVar(&f.audio, "audio", nil, "transcribe an audio file (a voice memo: Ogg, MP3, WAV, M4A; repeatable) with stt: and send its words with -q's prompt, or as the prompt without -q")
}

// chatter is a wired chat (app.Chat) and what runs its cron jobs.
type chatter struct {
	*app.Chat
	cronw *cronWiring
	// prefs are what the chat's slash commands set for it.
	prefs chatPrefs
	// live is config.yaml as it is now (read per session).
	live config.Live
}

// newChatter wires a chat (see app.NewChat) able to run cron jobs.
func newChatter(g *app.Factory, ov config.Overrides, asker tool.Asker, opts ...app.ChatOption) (*chatter, error) {
	ch, err := app.NewChat(g, ov, asker, opts...)
	if err != nil {
		return nil, err
	}
	c := &chatter{Chat: ch}
	if err := c.wireCron(ch.File, ch.CronTool); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *chatter) newSession(ctx context.Context, source string) (string, error) {
	id := uuid.NewString()
	return id, c.createSession(ctx, source, id)
}

// createSession starts session id (its first events: the start and the
// stable prefix).
func (c *chatter) createSession(ctx context.Context, source, id string) error {
	return c.startSession(ctx, id, source, c.Cfg.Model, c.Tools)
}

// startSession creates session id with the stable prefix for tools (and
// the skills index when skill_view is among them).
func (c *chatter) startSession(ctx context.Context, id, source, model string, tools []string) error {
	var index []prompt.Skill
	if slices.Contains(tools, "skill_view") {
		index = c.skillIndex(source, tools)
	}
	mem := c.memoryConfig()
	sys := prompt.Build(prompt.Options{Home: c.App.Home, WorkingDir: c.WD, ToolNames: tools, Skills: index, Now: time.Now(), NoMemory: !mem.On(), NoUserProfile: !mem.UserOn()})
	return session.Create(ctx, c.App.Store, id, session.Start{Source: source, Model: model, Provider: c.Cfg.LLM.Provider, WorkingDir: c.WD, System: sys})
}

// findResumable resolves --resume (id or prefix) or --continue.
func (c *chatter) findResumable(ctx context.Context, id string, last bool) (string, error) {
	if id != "" {
		rs, err := c.App.Store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 1)
		if err == nil && len(rs) == 1 {
			return id, nil
		}
	}
	if err := c.App.Fresh(ctx); err != nil {
		return "", err
	}
	if last {
		list, err := sessions.List(ctx, c.App.ProjDB.Reader(), 0)
		if err != nil {
			return "", err
		}
		// the last conversation: not an empty session, not a subagent's
		for _, s := range list {
			if listed(s) {
				return s.ID, nil
			}
		}
		return "", errors.New("--continue: there is no session with messages yet; start one with `hermes chat`")
	}
	s, ok, err := sessions.Get(ctx, c.App.ProjDB.Reader(), id)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("no session %q: `hermes sessions list` shows the sessions there are", id)
	}
	return s.ID, nil
}

// interruptible returns a context cancelled, with the signal as its cause,
// on SIGINT or SIGTERM.
func interruptible(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			name := "SIGINT"
			if s == syscall.SIGTERM {
				name = "SIGTERM"
			}
			cancel(agent.Cause("interrupted by " + name))
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

// progress prints what a turn does on w (stderr), for people watching.
func progress(w io.Writer, quiet bool) agent.Observer {
	return func(o agent.Observation) {
		if quiet {
			return
		}
		switch o.Kind {
		case agent.ObserveToolStart:
			fmt.Fprintf(w, "  ⚙ %s %s\n", o.Tool, clip(o.Text, 100))
		case agent.ObserveToolEnd:
			if o.Err != "" {
				fmt.Fprintf(w, "  ✗ %s: %s\n", o.Tool, clip(o.Err, 200))
			} else {
				fmt.Fprintf(w, "  ✓ %s\n", o.Tool)
			}
		case agent.ObserveStatus:
			if !strings.HasPrefix(o.Text, "calling ") {
				fmt.Fprintf(w, "  … %s\n", o.Text)
			}
		}
	}
}

// stdinTerminal reports whether the chat's input is a terminal (a person)
// rather than a pipe (a script).
func stdinTerminal(s app.IOStreams) bool {
	in, ok := s.In.(*os.File)
	return ok && isatty.IsTerminal(in.Fd())
}

// runChat runs `hermes chat`.
func runChat(ctx context.Context, f *chatFlags) error {
	tuneChatGC()
	g := f.app
	if f.resume != "" && f.cont {
		return errors.New("use either --resume ID or --continue, not both")
	}
	if f.query == "" && !f.plain && onTerminal(f.io) {
		return runScreenChat(ctx, g, f)
	}
	con := newConsole(f.io.In, f.io.ErrOut)
	// The person's own chat keeps its session, and the session's lease,
	// for as long as it is open: passivation (sessions.idle_after) is for
	// the many sessions of a gateway or node, and an idle terminal must not
	// let another process take the conversation it shows.
	opts := []app.ChatOption{func(d *session.Deps, _ model.Provider, _ config.Resolved) { d.IdleAfter = -1 }}
	if f.query == "" && stdinTerminal(f.io) {
		// A person typing plain lines gets titles as on the screen; a
		// script (-q, or lines from a pipe) does not pay for the extra
		// model call, as in Hermes' quiet single-query mode.
		opts = append(opts, func(d *session.Deps, provider model.Provider, cfg config.Resolved) {
			if cfg.AutoTitle {
				d.Title = titler(provider, cfg, nil)
			}
		})
	}
	c, err := newChatter(g, f.ov, con, opts...)
	if err != nil {
		return err
	}
	defer c.Stop()
	defer c.finishReviews(f)
	c.showReviews(f)
	// The images are stored before the session is, so that a refused one
	// leaves nothing behind.
	images, err := storeImageFiles(ctx, c.App.Blobs(), f.images)
	if err != nil {
		return err
	}
	if heard, err := transcribeFiles(ctx, app.Transcriber(c.Cfg), f.audio); err != nil {
		return err
	} else if len(heard) > 0 {
		if !f.quiet {
			fmt.Fprintf(f.io.ErrOut, "heard: %s\n", strings.Join(heard, " "))
		}
		f.query = strings.TrimSpace(strings.Join(heard, "\n") + "\n\n" + f.query)
	}
	stderr := f.io.ErrOut
	var id string
	if f.resume != "" || f.cont {
		id, err = c.findResumable(ctx, f.resume, f.cont)
	} else {
		id, err = c.newSession(ctx, f.source)
	}
	if err != nil {
		return err
	}
	defer func() { c.Hooks.SessionFinalized(context.WithoutCancel(ctx), id, "shutdown") }()
	// Take the session now: a session another process runs is refused
	// before anything is shown or sent.
	if _, err := c.Mgr.Session(ctx, id); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "session: %s\n", id)
	if f.query != "" {
		qctx, stopQ := context.WithCancel(ctx)
		defer stopQ()
		go con.serveQuestions(qctx)
		return c.oneShot(ctx, id, f, images)
	}
	return c.interactive(ctx, id, f, con, images)
}

// finishReviews says, before the chat stops, that a background review it
// waits for is still running, and shows reviews' notes until then.
func (c *chatter) finishReviews(f *chatFlags) {
	if c.Reviews != nil && c.Reviews.Running() > 0 && !f.quiet {
		fmt.Fprintf(f.io.ErrOut, "a background review is running: letting it finish (at most %s)\n", c.Cfg.Review.Timeout)
	}
}

// showReviews prints each background review's one-line note.
func (c *chatter) showReviews(f *chatFlags) {
	if f.quiet {
		return
	}
	c.OnReview(func(r review.Finished) { fmt.Fprintf(f.io.ErrOut, "review: %s\n", r.Note) })
}

func (c *chatter) oneShot(ctx context.Context, id string, f *chatFlags, images []schema.ImageRef) error {
	ctx, done := interruptible(ctx)
	defer done()
	if !f.quiet {
		for _, im := range images {
			fmt.Fprintf(f.io.ErrOut, "image: %s (%s, %d bytes)\n", im.Name, im.MediaType, im.Size)
		}
	}
	res := c.Mgr.RunTurn(ctx, id, &session.Turn{Text: f.query, Images: images, Observe: progress(f.io.ErrOut, f.quiet)})
	if errors.Is(res.Err, agent.ErrInterrupted) {
		return &exitError{code: 130, err: fmt.Errorf("turn interrupted (%v); resume with: hermes chat --resume %s", context.Cause(ctx), id)}
	}
	if res.SessionID != "" && res.SessionID != id {
		fmt.Fprintf(f.io.ErrOut, "session: %s (continued after compression)\n", res.SessionID)
		id = res.SessionID
	}
	if res.Err != nil {
		return fmt.Errorf("turn failed: %w (the session is kept: hermes chat --resume %s)", res.Err, id)
	}
	fmt.Fprintln(f.io.Out, res.Answer)
	if outcome, iterations := c.outcome(ctx, id, res.TurnID); outcome == agent.OutcomeBudget {
		return &exitError{code: exitBudget, err: fmt.Errorf("the iteration budget ran out after %d model calls: the answer above is the model's summary of where it stopped; raise agent.max_turns or --max-turns, and continue with: hermes chat --resume %s", iterations, id)}
	}
	return nil
}

// exitBudget is chat -q's exit code when the iteration budget ran out, so
// scripts can tell an unfinished task from a finished one.
const exitBudget = 3

// outcome reads how turn turnID of session id ended (TurnCompleted).
func (c *chatter) outcome(ctx context.Context, id, turnID string) (string, int) {
	rs, err := c.App.Store.ReadStream(ctx, events.SessionStream(id), events.Backward, events.End, 16)
	if err != nil {
		return "", 0
	}
	for _, r := range rs {
		if r.Type == schema.TypeTurnCompleted && r.TurnID == turnID {
			if p, err := schema.Decode(r.Envelope); err == nil {
				tc := p.(schema.TurnCompleted)
				return tc.Outcome, tc.Iterations
			}
		}
	}
	return "", 0
}

// plainKeys is what plain chat's greeting and /help say after the commands.
const plainKeys = "(Ctrl-C stops a turn; Ctrl-D exits)"

func (c *chatter) interactive(ctx context.Context, id string, f *chatFlags, con *console, attach []schema.ImageRef) error {
	out, errw := f.io.Out, f.io.ErrOut
	fmt.Fprintln(errw, "commands: "+command.Plain.Brief()+"  "+plainKeys)
	// From a terminal, a line typed during a turn interrupts it (the
	// actor queues it). From a pipe, lines are a script: each waits for the
	// turn before it.
	script := !stdinTerminal(f.io)
	// In script mode, the next line is taken only when the previous one
	// is done with (a turn finished, a command ran).
	lines := con.lines
	var hold chan string
	waiting := false
	ready := func() { waiting = false }
	var question *pending
	// inputDone: a script's standard input ended during a turn.
	inputDone := false
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	// A turn's result, with the session it was sent to: a session that
	// compression continued in another is followed there, unless the
	// person moved on (/new, /resume) meanwhile.
	type ended struct {
		from string
		res  session.TurnResult
	}
	results := make(chan ended, 4)
	running, model := 0, ""
	shown := id // the session last announced
	tools := c.prefs.tools.observer(progress(errw, f.quiet), func(s string) {
		if !f.quiet {
			fmt.Fprintf(errw, "    %s\n", s)
		}
	})
	observe := func(o agent.Observation) {
		if o.Kind == agent.ObserveDelta {
			fmt.Fprint(out, o.Text)
			return
		}
		tools(o)
	}
	prompt := func() {
		if running == 0 {
			fmt.Fprint(errw, "› ")
		}
	}
	prompt()
	for {
		in := lines
		if script && waiting && question == nil {
			in = hold // nil: not reading
		}
		select {
		case p := <-con.questions:
			if inputDone {
				close(p.gone)
				continue
			}
			question = p
			con.show(p)
		case line, ok := <-in:
			if ok && question != nil {
				q := question
				if !understood(q, line) {
					con.reask(q, line)
					continue
				}
				question = nil
				if answer(q, line) {
					continue
				}
			}
			if !ok && question != nil {
				close(question.gone)
				question = nil
			}
			if !ok && script && running > 0 {
				// A script's input ended while its last turn runs: the
				// turn finishes, as with -q, and a question it asks is
				// answered "nobody can" (a denied command goes back to the
				// model as the tool's result) instead of the turn being
				// cut off without a word.
				inputDone, lines = true, nil
				continue
			}
			if !ok {
				if running > 0 {
					c.Mgr.Stop(id, "input closed")
					for ; running > 0; running-- {
						<-results
					}
				}
				return nil
			}
			line = strings.TrimSpace(line)
			if line == "" {
				prompt()
				ready()
				continue
			}
			typed, arg, isCmd := command.Plain.Parse(line)
			var loaded []string
			if isCmd && typed.ID == command.Unknown && command.Plain.Unknown(typed.Name).Elsewhere == 0 {
				// /<skill-name>: the turn loads the skill.
				inv, err := c.invokeSkill(id, "cli", typed.Name, arg)
				switch {
				case err == nil:
					fmt.Fprintln(errw, loadedNote(inv))
					line, loaded, isCmd = inv.Text, inv.Skills, false
				case !errors.Is(err, skills.ErrNoSkill):
					fmt.Fprintln(errw, "error:", err)
					prompt()
					ready()
					continue
				}
			}
			if isCmd {
				prev := id
				var quit bool
				var err error
				if running > 0 && (typed.ID == command.Undo || typed.ID == command.Retry) {
					err = errBusy
				} else {
					quit, err = c.slash(ctx, errw, typed, arg, &id, &model)
				}
				if err != nil {
					fmt.Fprintln(errw, "error:", err)
				}
				if id != prev && running == 0 {
					// Let the session we left go: another process may
					// resume it now.
					c.Mgr.Restart(prev)
				}
				switch typed.ID {
				case command.New, command.Resume, command.Compress, command.Clear, command.Sessions, command.Undo, command.Retry:
					shown = id
				}
				if quit {
					if running > 0 {
						c.Mgr.Stop(id, "user exited")
						for ; running > 0; running-- {
							<-results
						}
					}
					return nil
				}
				if c.prefs.resend == "" {
					prompt()
					ready()
					continue
				}
				// /retry: the message taken back is sent again.
				line, c.prefs.resend = c.prefs.resend, ""
				fmt.Fprintf(errw, "› %s\n", line)
			}
			var imgs []schema.ImageRef
			var err error
			if loaded == nil {
				var heard []string
				line, heard, err = lineAudio(ctx, app.Transcriber(c.Cfg), line)
				if err != nil {
					fmt.Fprintln(errw, "error:", err)
					prompt()
					ready()
					continue
				}
				if len(heard) > 0 {
					fmt.Fprintf(errw, "heard: %s\n", strings.Join(heard, " "))
				}
				imgs, err = lineImages(ctx, c.App.Blobs(), line)
			}
			if err != nil {
				fmt.Fprintln(errw, "error:", err)
				prompt()
				ready()
				continue
			}
			imgs, attach = append(attach, imgs...), nil
			if !script {
				ready()
			}
			running++
			waiting = true
			turnID, text, m, persona := id, line, model, c.prefs.persona
			go func() {
				results <- ended{turnID, c.Mgr.RunTurn(context.Background(), turnID, &session.Turn{Text: text, Images: imgs, Observe: observe, Model: m, Persona: persona, Skills: loaded})}
			}()
		case e := <-results:
			res := e.res
			running--
			if res.SessionID != "" && res.SessionID != e.from && e.from == id {
				id = res.SessionID
			}
			if res.SessionID != "" && res.SessionID != shown {
				shown = res.SessionID
				fmt.Fprintf(errw, "\nsession: %s (continued after compression)\n", res.SessionID)
			}
			switch {
			case errors.Is(res.Err, agent.ErrInterrupted):
				fmt.Fprintln(errw, "\n[interrupted]")
			case res.Err != nil:
				fmt.Fprintln(errw, "\nerror:", res.Err)
			default:
				fmt.Fprintln(out)
			}
			if inputDone && running == 0 {
				return nil
			}
			prompt()
			ready()
		case <-sigs:
			if running == 0 {
				fmt.Fprintln(errw, "\n(use /exit or Ctrl-D to leave)")
				prompt()
				continue
			}
			c.Mgr.Stop(id, "interrupted by SIGINT")
		}
	}
}

// slash runs a slash command of plain chat; quit is true for /exit.
func (c *chatter) slash(ctx context.Context, errw io.Writer, cmd *command.Command, arg string, id, model *string) (bool, error) {
	switch cmd.ID {
	case command.Unknown:
		return false, command.Plain.Unknown(cmd.Name)
	case command.Exit:
		return true, nil
	case command.New, command.Clear:
		if cmd.ID == command.Clear && isTerminal(errw) {
			fmt.Fprint(errw, clearScreen)
		}
		c.Hooks.SessionFinalized(ctx, *id, "new")
		nid, err := c.newSession(ctx, "cli")
		if err != nil {
			return false, err
		}
		c.Hooks.SessionReset(ctx, *id, nid)
		*id = nid
		if cmd.ID == command.New && arg != "" {
			if err := c.Mgr.Retitle(ctx, nid, arg); err != nil {
				return false, err
			}
		}
		fmt.Fprintf(errw, "session: %s\n", nid)
	case command.Plugins:
		fmt.Fprintln(errw, pluginsReport(c.Plugins))
	case command.Resume:
		if len(strings.Fields(arg)) != 1 {
			return false, errors.New("usage: /resume ID")
		}
		rid, err := c.findResumable(ctx, arg, false)
		if err != nil {
			return false, err
		}
		if _, err := c.Mgr.Session(ctx, rid); err != nil {
			return false, err
		}
		*id = rid
		fmt.Fprintf(errw, "session: %s\n", rid)
	case command.Stop:
		c.Mgr.Stop(*id, "user sent /stop")
	case command.Undo, command.Retry:
		n := 1
		if cmd.ID == command.Undo && arg != "" {
			var err error
			if n, err = strconv.Atoi(arg); err != nil || n < 1 {
				return false, errors.New("usage: /undo [N], N a number of turns")
			}
		}
		u, err := session.Undo(ctx, c.App.Store, *id, n)
		if err != nil {
			return false, err
		}
		if title := sessionTitle(ctx, c.App.Store, *id); title != "" {
			if err := c.Mgr.Retitle(ctx, u.Fork, title); err != nil {
				return false, err
			}
		}
		fmt.Fprintf(errw, "undid %d turn(s): the chat goes on in session %s, a fork of %s (/resume %s goes back)\n", u.Turns, u.Fork, u.From, short(*id))
		*id = u.Fork
		if cmd.ID == command.Retry {
			c.prefs.resend = u.Text
		} else {
			fmt.Fprintf(errw, "taken back: %s\n", u.Text)
		}
	case command.Compress:
		force := arg == "--force"
		if arg != "" && !force {
			return false, errors.New("usage: /compress [--force]")
		}
		next, err := c.Mgr.CompressNow(ctx, *id, session.CompressNow{Model: *model, Force: force})
		if err != nil {
			return false, err
		}
		*id = next
		fmt.Fprintf(errw, "compressed: the conversation continues in session %s\n", next)
	case command.Sessions:
		if arg == "" {
			list, err := c.prefs.listSessions(ctx, c.App, *id)
			if err != nil {
				return false, err
			}
			fmt.Fprintln(errw, list)
			return false, nil
		}
		rid, err := c.prefs.pick(arg)
		if err != nil {
			return false, err
		}
		if _, err := c.Mgr.Session(ctx, rid); err != nil {
			return false, err
		}
		*id = rid
		fmt.Fprintf(errw, "session: %s\n", rid)
	case command.Config:
		text, err := configText(c.App.Home, c.Cfg, *model, &c.prefs)
		if err != nil {
			return false, err
		}
		fmt.Fprintln(errw, text)
	case command.Copy:
		n, err := copyArg(arg)
		if err != nil {
			return false, err
		}
		text, err := nthAnswer(ctx, c.App, *id, n)
		if err != nil {
			return false, err
		}
		if !isTerminal(errw) {
			return false, errors.New("/copy reaches the clipboard through the terminal (OSC 52), and this chat's stderr is not one")
		}
		fmt.Fprint(errw, osc52(text))
		fmt.Fprintf(errw, "copied %d characters\n", len(text))
	case command.Personality:
		msg, err := c.prefs.personality(c.File, arg)
		if err != nil {
			return false, err
		}
		fmt.Fprintln(errw, msg)
	case command.Verbose:
		v, err := c.prefs.tools.set(arg)
		if err != nil {
			return false, err
		}
		fmt.Fprintf(errw, "verbose %s: %s\n", v, v.describe())
	case command.Bundles:
		fmt.Fprintln(errw, bundlesText(c.App.Home))
	case command.Memory:
		text, err := memoryCommand(ctx, c.App.Home, c.App.Store, "cli", arg)
		if err != nil {
			return false, err
		}
		fmt.Fprintln(errw, text)
	case command.Insights:
		days, err := insightsArg(arg)
		if err != nil {
			return false, err
		}
		in, err := insightsOf(ctx, c.App, days, time.Now())
		if err != nil {
			return false, err
		}
		fmt.Fprintln(errw, in)
	case command.Version:
		fmt.Fprintln(errw, versionLine())
	case command.Profile:
		fmt.Fprintln(errw, profileText(c.App.Home))
	case command.Model:
		name, global, err := modelArg(arg)
		if err != nil {
			return false, err
		}
		if name == "" {
			fmt.Fprintln(errw, modelsText(c.Cfg, c.File, *model))
			return false, nil
		}
		msg, err := switchModel(c.App.Home, name, global)
		if err != nil {
			return false, err
		}
		*model = name
		fmt.Fprintln(errw, msg)
	case command.Usage:
		u, err := usageOf(ctx, c.App.Store, *id, c.Cfg.Prices)
		if err != nil {
			return false, err
		}
		fmt.Fprintf(errw, "session %s: %s\n", *id, u)
	case command.Help:
		fmt.Fprintf(errw, "commands:\n%s\n%s\n", command.Plain.Help(), plainKeys)
	default:
		return false, fmt.Errorf("%s %w", cmd.Name, errNoHandler)
	}
	return false, nil
}

// clearScreen clears a terminal and puts the cursor at its top (/clear).
const clearScreen = "\x1b[H\x1b[2J"

// errNoHandler is a command the table offers a chat without a case in its
// switch: a bug, which the tests look for.
var errNoHandler = errors.New("is in the command table but has no handler here")

// convUsage is what /usage reports: the conversation's model calls, across
// the sessions compression carried it through.
type convUsage struct {
	Usage    schema.Usage
	Cost     float64
	Calls    int
	Sessions int
	// Unpriced are models with calls but no known price.
	Unpriced []string
}

// usageOf totals the usage of the conversation that session id ends (see
// session.Conversation: the sessions before a compression or a fork
// count, up to it). HTTP calls count continuations and auxiliary calls
// (summaries, memory flushes).
func usageOf(ctx context.Context, store events.Store, id string, prices model.Prices) (convUsage, error) {
	var u convUsage
	var err error
	u.Sessions, err = session.Conversation(ctx, store, id, func(r events.Recorded) error {
		switch r.Type {
		case schema.TypeAssistantMessageAdded, schema.TypeAuxiliaryCallCompleted:
		default:
			return nil
		}
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return err
		}
		var model string
		var usage schema.Usage
		var recorded float64
		switch e := p.(type) {
		case schema.AssistantMessageAdded:
			u.Calls, model, usage, recorded = u.Calls+max(e.Calls, 1), e.Model, e.Usage, e.CostUSD
		case schema.AuxiliaryCallCompleted:
			u.Calls, model, usage, recorded = u.Calls+1, e.Model, e.Usage, e.CostUSD
		}
		u.Usage = u.Usage.Add(usage)
		// a call made before its model had a price is priced now
		if cost, ok := prices.CallCost(model, usage, recorded); ok {
			u.Cost += cost
		} else if !slices.Contains(u.Unpriced, model) {
			u.Unpriced = append(u.Unpriced, model)
		}
		return nil
	})
	return u, err
}

// String is the /usage line.
func (u convUsage) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d model calls", u.Calls)
	if u.Sessions > 1 {
		fmt.Fprintf(&b, " over %d sessions (compressions, /undo, /retry, /branch)", u.Sessions)
	}
	fmt.Fprintf(&b, ", prompt %d (cache read %d, write %d), completion %d tokens", u.Usage.PromptTokens, u.Usage.CacheReadTokens,
		u.Usage.CacheWriteTokens, u.Usage.CompletionTokens)
	if u.Usage.Estimated {
		b.WriteString(" (some estimated: the server reported no usage)")
	}
	switch {
	case len(u.Unpriced) > 0 && u.Cost == 0:
		fmt.Fprintf(&b, ", cost unknown (no price for %s: add it under prices: in config.yaml)", strings.Join(u.Unpriced, ", "))
	case len(u.Unpriced) > 0:
		fmt.Fprintf(&b, ", $%.4f plus an unknown cost for %s", u.Cost, strings.Join(u.Unpriced, ", "))
	default:
		fmt.Fprintf(&b, ", $%.4f", u.Cost)
	}
	return b.String()
}
