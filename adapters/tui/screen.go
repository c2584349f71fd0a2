// Package tui is Hermes' interactive chat screen: a line editor at the
// bottom of the terminal (history across sessions, Ctrl-R search,
// multi-line input and bracketed paste, Tab completion of slash commands),
// a spinner with the elapsed time while the agent works, and above it the
// conversation: what the person sent, tool calls as they start and end,
// subagent activity indented under its delegate_task, the assistant's
// answer rendered from Markdown, and questions (approvals, clarify)
// answered in the same editor. It is built on Bubble Tea.
//
// The chat itself (sessions, turns, slash commands) is the caller's: it
// reads Events and drives the Screen through its methods, from any
// goroutine.
package tui

import (
	"context"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/tool"
)

// EventKind tells what the person did.
type EventKind int

const (
	// Submit: Enter on a message or a slash command (Event.Text).
	Submit EventKind = iota
	// Interrupt: Ctrl-C while the agent works.
	Interrupt
	// Exit: Ctrl-D on an empty prompt, or Ctrl-C twice.
	Exit
)

// Event is something the person did at the prompt.
type Event struct {
	Kind EventKind
	Text string
}

// Command is a slash command, for Tab completion.
type Command struct {
	Name string // with its slash: "/undo"
	Help string
	// Words complete its first argument ("--force", "show", ...).
	Words []string
}

// Options configure a Screen.
type Options struct {
	In  io.Reader
	Out io.Writer
	// History is what was typed before (nil: none kept).
	History  *History
	Commands []Command
	// Color: false renders without colours (NO_COLOR, or a terminal
	// without them); Markdown is still laid out.
	Color bool
	// Env is the environment the terminal's abilities are read from.
	Env []string
	// Status is the line under the prompt (model, session, title).
	Status string
}

// Screen is a running chat screen.
type Screen struct {
	opts   Options
	p      *tea.Program
	events chan Event
	done   chan struct{}
	closed atomic.Bool
	// sized is closed when the program has taken the terminal's size.
	sized     chan struct{}
	sizedOnce sync.Once

	width atomic.Int32
	dark  atomic.Bool

	// mu orders what is printed: each print is sent to the program in the
	// order the methods were called. Update never takes it.
	mu        sync.Mutex
	md        markdown
	answer    blocks
	shown     int // blocks of the current answer printed
	reasoning bool
	thinking  strings.Builder
	running   map[string]runningTool
	st        styles
	profile   colorprofile.Profile
}

type runningTool struct {
	name  string
	depth int
	start time.Time
}

// New prepares a screen on opts.In and opts.Out; Run shows it.
func New(opts Options) *Screen {
	if opts.History == nil {
		opts.History, _ = LoadHistory("")
	}
	s := &Screen{opts: opts, events: make(chan Event, 1024), done: make(chan struct{}), sized: make(chan struct{}), running: map[string]runningTool{}}
	s.st = newStyles(opts.Color)
	s.width.Store(80)
	s.dark.Store(true)
	profile := colorprofile.Detect(opts.Out, opts.Env)
	if !opts.Color {
		profile = colorprofile.ASCII
	}
	s.profile, s.md.profile = profile, profile
	m := newModel(s)
	popts := []tea.ProgramOption{tea.WithInput(opts.In), tea.WithOutput(opts.Out), tea.WithEnvironment(opts.Env),
		tea.WithColorProfile(profile), tea.WithoutSignalHandler(), tea.WithFPS(120)}
	s.p = tea.NewProgram(m, popts...)
	return s
}

// Run shows the screen until Close (or the terminal goes away); Events is
// closed when it returns.
func (s *Screen) Run() error {
	_, err := s.p.Run()
	s.closed.Store(true)
	close(s.done)
	close(s.events)
	return err
}

// Settle waits (up to a second) until the screen has taken the
// terminal's size and drawn itself: Bubble Tea redraws the screen when it
// learns the size, and lines printed above the prompt before that can land
// out of place. What the chat prints at once on opening (a resumed
// conversation's recap) waits for it.
func (s *Screen) Settle() {
	select {
	case <-s.sized:
		time.Sleep(50 * time.Millisecond) // a few frames: the redraw is done
	case <-s.done:
	case <-time.After(time.Second):
	}
}

// Events are what the person does, in order.
func (s *Screen) Events() <-chan Event { return s.events }

// Close ends the screen: what was printed stays, the prompt goes.
func (s *Screen) Close() {
	s.send(closeMsg{})
}

// send hands msg to the program, unless it has ended.
func (s *Screen) send(msg tea.Msg) {
	if s.closed.Load() {
		return
	}
	s.p.Send(msg)
}

// emit prints text above the prompt; s.mu is held. The text goes out a
// line at a time: Bubble Tea makes room for printed lines by scrolling the
// terminal by their number and inserting them above the prompt, which
// scrambles the scrollback (the prompt left in it, blank lines, the tail
// above the start) when that number is more than the room above the
// prompt, as with an answer longer than the terminal.
func (s *Screen) emit(text string) {
	w := int(s.width.Load()) - 1
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if ansi.StringWidth(l) > w {
			lines[i] = ansi.Wrap(l, w, " ")
		}
	}
	// A blank line goes with the line after it (Bubble Tea drops an
	// empty print), and a run of them at most four at a time.
	var chunk []string
	for _, l := range strings.Split(downsample(strings.Join(lines, "\n"), s.profile), "\n") {
		chunk = append(chunk, l)
		if l != "" || len(chunk) == 4 {
			s.send(tea.Println(strings.Join(chunk, "\n"))())
			chunk = chunk[:0]
		}
	}
	if len(chunk) > 0 {
		s.send(tea.Println(strings.Join(chunk, "\n") + " ")())
	}
}

// Print prints text above the prompt as it is.
func (s *Screen) Print(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushAnswer()
	s.emit(text)
}

// Info prints a line of the chat's own (a command's output), dimmed.
func (s *Screen) Info(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushAnswer()
	s.emit(s.st.info.Render(text))
}

// Error prints an error line.
func (s *Screen) Error(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushAnswer()
	s.emit(s.st.err.Render(text))
}

// Echo prints what the person sent, as the conversation's record.
func (s *Screen) Echo(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushAnswer()
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		mark := "  "
		if i == 0 {
			mark = "› "
		}
		lines[i] = s.st.user.Render(mark + l)
	}
	s.emit("\n" + strings.Join(lines, "\n"))
}

// Busy shows the spinner with label and the time since now.
func (s *Screen) Busy(label string) {
	s.send(busyMsg{on: true, label: label, since: time.Now()})
}

// Idle ends the spinner; the answer streamed so far is printed.
func (s *Screen) Idle() {
	s.mu.Lock()
	s.flushAnswer()
	s.running = map[string]runningTool{}
	s.mu.Unlock()
	s.send(busyMsg{on: false})
}

// Answer prints a whole answer of the assistant, rendered from Markdown
// as a streamed one is (a resumed conversation's recap).
func (s *Screen) Answer(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushAnswer()
	s.printBlocks(text)
	s.shown = 0
}

// EndAnswer prints what is left of the streamed answer.
func (s *Screen) EndAnswer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushAnswer()
}

// Prefill puts text in the editor, to edit and send again (/undo).
func (s *Screen) Prefill(text string) { s.send(prefillMsg(text)) }

// SetStatus sets the line under the prompt.
func (s *Screen) SetStatus(text string) { s.send(statusMsg(text)) }

// ShowReasoning shows (or hides) the model's thinking as it streams.
func (s *Screen) ShowReasoning(on bool) {
	s.mu.Lock()
	s.reasoning = on
	s.mu.Unlock()
}

// flushAnswer prints the rest of the streamed answer; s.mu is held.
func (s *Screen) flushAnswer() {
	s.endThinking()
	if rest := s.answer.flush(); strings.TrimSpace(rest) != "" {
		s.printBlocks(rest)
	}
	if s.shown > 0 {
		s.send(liveMsg{})
	}
	s.shown = 0
}

// printBlocks renders complete Markdown of the answer; s.mu is held.
func (s *Screen) printBlocks(text string) {
	out := s.md.render(text, int(s.width.Load()), s.dark.Load())
	if out == "" {
		return
	}
	if s.shown == 0 {
		out = "\n" + out
	} else {
		out = "\n" + out
	}
	s.shown++
	s.emit(trimRight(out))
}

func (s *Screen) endThinking() {
	if s.thinking.Len() == 0 {
		return
	}
	text := strings.TrimSpace(s.thinking.String())
	s.thinking.Reset()
	if text != "" && s.reasoning {
		s.emit(s.st.thinking.Render("  💭 " + strings.ReplaceAll(text, "\n", "\n     ")))
	}
	s.send(liveMsg{})
}

// Observe shows what a turn does: it is the turn's agent.Observer.
func (s *Screen) Observe(o agent.Observation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	indent := "  " + strings.Repeat("│ ", o.Depth)
	switch o.Kind {
	case agent.ObserveDelta:
		if o.Depth > 0 {
			return // a subagent's answer comes back as its delegate_task's result
		}
		s.endThinking()
		if done := s.answer.add(o.Text); done != "" {
			s.printBlocks(done)
		}
		s.send(labelMsg("answering"))
		s.send(liveMsg{text: s.answer.rest()})
	case agent.ObserveReasoning:
		if o.Depth > 0 {
			return
		}
		s.thinking.WriteString(o.Text)
		s.send(labelMsg("thinking"))
		if s.reasoning {
			s.send(liveMsg{text: s.thinking.String(), dim: true})
		}
	case agent.ObserveStep:
		if o.Depth == 0 {
			s.send(labelMsg("thinking"))
		}
	case agent.ObserveToolStart:
		s.flushAnswer()
		s.running[o.ID] = runningTool{name: o.Tool, depth: o.Depth, start: time.Now()}
		line := indent + s.st.tool.Render("⚙ "+o.Tool)
		if p := argsPreview(o.Text, max(int(s.width.Load())-len(indent)-len(o.Tool)-8, 20)); p != "" {
			line += "  " + s.st.args.Render(p)
		}
		s.emit(line)
		s.send(s.toolsMsg())
	case agent.ObserveToolEnd:
		s.flushAnswer()
		d := o.Duration
		if r, ok := s.running[o.ID]; ok && d == 0 {
			d = time.Since(r.start)
		}
		delete(s.running, o.ID)
		room := max(int(s.width.Load())-len(indent)-len(o.Tool)-16, 20)
		var line string
		if o.Err != "" {
			line = indent + s.st.err.Render("✗ "+o.Tool) + " " + s.st.faint.Render(duration(d)) + "  " + s.st.err.Render(oneLine(o.Err, room))
		} else {
			line = indent + s.st.ok.Render("✓ "+o.Tool) + " " + s.st.faint.Render(duration(d))
			if p := oneLine(o.Text, room); p != "" {
				line += "  " + s.st.faint.Render("→ "+p)
			}
		}
		s.emit(line)
		s.send(s.toolsMsg())
	case agent.ObserveStatus:
		if strings.HasPrefix(o.Text, "calling ") {
			if o.Depth == 0 {
				s.send(labelMsg(o.Text))
			}
			return
		}
		if discarded(o.Text) && o.Depth == 0 {
			// What was shown of that answer is void: say so, and make the
			// retry's answer start on a fresh block.
			s.endThinking()
			if rest := s.answer.flush(); strings.TrimSpace(rest) != "" {
				s.emit(s.st.void.Render("  " + strings.ReplaceAll(trimRight(rest), "\n", "\n  ")))
			}
			s.send(liveMsg{})
			s.shown = 0
			s.emit(indent + s.st.warn.Render("… "+o.Text))
			s.emit(indent + s.st.warn.Render("↻ retrying: the answer starts again below"))
			return
		}
		s.flushAnswer()
		s.emit(indent + s.st.warn.Render("… "+o.Text))
	}
}

func (s *Screen) toolsMsg() toolsMsg {
	var names []string
	for _, r := range s.running {
		if r.depth == 0 {
			names = append(names, r.name)
		}
	}
	return toolsMsg(names)
}

// question is one question waiting in the editor.
type question struct {
	q     tool.Question
	reply chan string
}

// Ask puts q to the person in the editor, so that the question and the next
// chat message never race for the same line; it is the chat's
// tool.Asker.
func (s *Screen) Ask(ctx context.Context, q tool.Question) (string, error) {
	s.mu.Lock()
	s.flushAnswer()
	s.mu.Unlock()
	qq := &question{q: q, reply: make(chan string, 1)}
	if s.closed.Load() {
		return "", tool.ErrNoAsker
	}
	s.send(questionMsg{qq})
	select {
	case a := <-qq.reply:
		s.mu.Lock()
		s.emit(s.st.question.Render("? "+q.Text) + "\n" + s.st.user.Render("  → "+a))
		s.mu.Unlock()
		return a, nil
	case <-ctx.Done():
		s.send(questionGoneMsg{qq})
		s.mu.Lock()
		s.emit(s.st.question.Render("? "+q.Text) + "\n" + s.st.faint.Render("  (no answer in time)"))
		s.mu.Unlock()
		return "", ctx.Err()
	case <-s.done:
		return "", tool.ErrNoAsker
	}
}

// Understood reports whether answer answers q: an approval takes one of its
// choices, its first letter, yes or no; anything else is asked again,
// never taken as a refusal or a consent by accident.
func Understood(q tool.Question, answer string) bool {
	if q.Kind != tool.QuestionApproval || len(q.Choices) == 0 {
		return true
	}
	a := strings.ToLower(strings.TrimSpace(answer))
	switch a {
	case "y", "yes", "n", "no":
		return true
	}
	for _, c := range q.Choices {
		if a == c || (len(a) == 1 && strings.HasPrefix(c, a)) {
			return true
		}
	}
	return false
}

// trimRight drops the trailing blanks of each line, and the styles around
// them (the Markdown renderer pads lines to its width, which would wrap on
// a narrower terminal); a line that lost styles ends with a reset.
func trimRight(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		styled := false
		for {
			if t := strings.TrimRight(l, " "); t != l {
				l = t
				continue
			}
			if !strings.HasSuffix(l, "m") {
				break
			}
			j := strings.LastIndex(l, "\x1b[")
			if j < 0 || strings.Trim(l[j+2:len(l)-1], "0123456789;") != "" {
				break
			}
			l, styled = l[:j], true
		}
		if styled {
			l += "\x1b[m"
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}

// styles are the looks of what the screen prints.
type styles struct {
	user, info, err, warn, tool, args, ok, faint, void, thinking, question, status, spinner, note lipgloss.Style
}

func newStyles(color bool) styles {
	n := lipgloss.NewStyle
	if !color {
		return styles{user: n().Bold(true), info: n(), err: n(), warn: n(), tool: n(), args: n(), ok: n(), faint: n(),
			void: n().Strikethrough(true), thinking: n(), question: n().Bold(true), status: n(), spinner: n(), note: n()}
	}
	c := lipgloss.Color
	return styles{
		user:     n().Bold(true).Foreground(c("12")),
		info:     n().Foreground(c("245")),
		err:      n().Foreground(c("9")),
		warn:     n().Foreground(c("11")),
		tool:     n().Foreground(c("14")),
		args:     n().Foreground(c("250")),
		ok:       n().Foreground(c("10")),
		faint:    n().Foreground(c("243")),
		void:     n().Foreground(c("243")).Strikethrough(true),
		thinking: n().Foreground(c("243")).Italic(true),
		question: n().Bold(true).Foreground(c("13")),
		status:   n().Foreground(c("241")),
		spinner:  n().Foreground(c("13")),
		note:     n().Foreground(c("11")),
	}
}

// The messages the screen sends its program.
type (
	closeMsg struct{}
	busyMsg  struct {
		on    bool
		label string
		since time.Time
	}
	labelMsg string
	liveMsg  struct {
		text string
		dim  bool
	}
	toolsMsg        []string
	prefillMsg      string
	statusMsg       string
	questionMsg     struct{ q *question }
	questionGoneMsg struct{ q *question }
	tickMsg         time.Time
)

func (s *Screen) push(e Event) {
	select {
	case s.events <- e:
	default: // a thousand unread events: the chat is gone
	}
}
