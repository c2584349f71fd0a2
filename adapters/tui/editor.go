package tui

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// A paste of more lines or characters than these is kept whole and shown
// as one placeholder in the editor (Hermes' paste_collapse thresholds).
const (
	pasteLines = 5
	pasteChars = 2000
)

// liveLines bounds the streamed text shown under the conversation before
// its block is complete and printed.
const liveLines = 8

// interrupting is the note under the editor from Ctrl-C until the turn
// ends.
const interrupting = "interrupting…"

const placeholder = "Message Hermes (/help for commands)"

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// model is the Bubble Tea model of the screen's bottom: what streams, the
// spinner, a pending question, the editor and the status line. It never
// blocks: what the person does goes out through Screen.push.
type model struct {
	s     *Screen
	ta    textarea.Model
	width int

	hist    *History
	histPos int // hist.Len(): the draft
	draft   string

	searching bool
	query     string
	match     int
	saved     string

	completions []string
	note        string

	pastes map[string]string
	pasteN int

	busy   bool
	label  string
	since  time.Time
	frame  int
	live   string
	dim    bool
	tools  []string
	status string

	questions []*question
	heldDraft string

	lastCtrlC time.Time
	quitting  bool
}

func newModel(s *Screen) *model {
	ta := textarea.New()
	ta.ShowLineNumbers = false
	ta.Placeholder = placeholder
	ta.DynamicHeight = true
	ta.MinHeight = 1
	ta.MaxHeight = 10
	ta.MaxContentHeight = 5000
	ta.CharLimit = 0
	ta.KeyMap.InsertNewline = key.NewBinding(key.WithKeys("alt+enter", "ctrl+j", "shift+enter"))
	st := textarea.DefaultDarkStyles()
	st.Focused.CursorLine = st.Focused.Text
	st.Cursor.Blink = false
	if !s.opts.Color {
		st = textarea.Styles{Cursor: textarea.CursorStyle{Blink: false}}
	}
	ta.SetStyles(st)
	m := &model{s: s, ta: ta, width: 80, hist: s.opts.History, pastes: map[string]string{}, status: s.opts.Status}
	m.ta.SetPromptFunc(2, func(i textarea.PromptInfo) string {
		if i.LineNumber == 0 {
			return m.prompt()
		}
		return "  "
	})
	m.ta.SetWidth(m.width)
	m.ta.Focus()
	m.histPos = m.hist.Len()
	return m
}

func (m *model) prompt() string {
	if len(m.questions) > 0 {
		return "? "
	}
	return "› "
}

func (m *model) Init() tea.Cmd {
	// The size comes with Bubble Tea's own first WindowSizeMsg: asking for
	// it again made a second redraw land among the lines the chat prints
	// on opening, and put them out of order.
	return tea.Batch(tea.RequestBackgroundColor)
}

func tick() tea.Cmd {
	return tea.Tick(100*time.Millisecond, func(t time.Time) tea.Msg { return tickMsg(t) })
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width = max(msg.Width, 20)
		m.s.width.Store(int32(m.width))
		m.ta.SetWidth(m.width)
		m.s.sizedOnce.Do(func() { close(m.s.sized) })
		return m, nil
	case tea.BackgroundColorMsg:
		m.s.dark.Store(msg.IsDark())
		return m, nil
	case closeMsg:
		m.quitting = true
		return m, tea.Quit
	case busyMsg:
		was := m.busy
		m.busy = msg.on
		if msg.on {
			m.label, m.since = msg.label, msg.since
			if !was {
				return m, tick()
			}
		} else {
			m.live, m.tools = "", nil
			if m.note == interrupting {
				m.note = "" // the turn has ended: nothing is being interrupted
			}
		}
		return m, nil
	case labelMsg:
		m.label = string(msg)
		return m, nil
	case liveMsg:
		m.live, m.dim = msg.text, msg.dim
		return m, nil
	case toolsMsg:
		m.tools = msg
		return m, nil
	case tickMsg:
		if !m.busy {
			return m, nil
		}
		m.frame++
		return m, tick()
	case prefillMsg:
		m.ta.SetValue(string(msg))
		return m, nil
	case statusMsg:
		m.status = string(msg)
		return m, nil
	case questionMsg:
		if len(m.questions) == 0 {
			m.heldDraft = m.ta.Value()
			m.ta.Reset()
		}
		m.questions = append(m.questions, msg.q)
		return m, nil
	case questionGoneMsg:
		for i, q := range m.questions {
			if q == msg.q {
				m.questions = append(m.questions[:i], m.questions[i+1:]...)
				if i == 0 {
					m.ta.Reset()
					m.note = ""
				}
				break
			}
		}
		if len(m.questions) == 0 {
			m.ta.SetValue(m.heldDraft)
		}
		return m, nil
	case tea.PasteMsg:
		m.paste(msg.Content)
		return m, nil
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	var cmd tea.Cmd
	m.ta, cmd = m.ta.Update(msg)
	return m, cmd
}

// paste puts pasted text in the editor: whole, in order, as one message;
// a long paste as a placeholder for the text it stands for.
func (m *model) paste(text string) {
	text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
	m.completions = nil
	if m.searching {
		m.query += strings.ReplaceAll(text, "\n", " ")
		m.search(m.hist.Len())
		return
	}
	lines := strings.Count(text, "\n")
	if lines < pasteLines && len(text) < pasteChars && !strings.Contains(text, "\t") {
		m.ta.InsertString(text)
		return
	}
	m.pasteN++
	tag := fmt.Sprintf("[paste #%d: %d lines, %d chars]", m.pasteN, lines+1, len(text))
	m.pastes[tag] = text
	m.ta.InsertString(tag)
}

// expand replaces paste placeholders with the text they stand for.
func (m *model) expand(s string) string {
	for tag, text := range m.pastes {
		s = strings.ReplaceAll(s, tag, text)
	}
	return s
}

func (m *model) key(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	k := msg.String()
	if m.searching {
		return m.searchKey(msg)
	}
	if k != "tab" {
		m.completions = nil
	}
	if k != "ctrl+c" {
		m.lastCtrlC = time.Time{}
	}
	switch k {
	case "ctrl+c":
		m.note = ""
		switch {
		case m.busy || len(m.questions) > 0:
			m.s.push(Event{Kind: Interrupt})
			m.note = interrupting
		case m.ta.Value() != "":
			m.ta.Reset()
		case !m.lastCtrlC.IsZero() && time.Since(m.lastCtrlC) < 3*time.Second:
			m.s.push(Event{Kind: Exit})
		default:
			m.lastCtrlC = time.Now()
			m.note = "press Ctrl-C again, or Ctrl-D, to leave"
		}
		return m, nil
	case "ctrl+d":
		if m.ta.Value() == "" && len(m.questions) == 0 {
			m.s.push(Event{Kind: Exit})
			return m, nil
		}
	case "enter":
		m.submit()
		return m, nil
	case "tab":
		if len(m.questions) == 0 {
			m.complete()
		}
		return m, nil
	case "ctrl+r":
		if len(m.questions) == 0 {
			m.searching, m.query, m.saved = true, "", m.ta.Value()
			m.match = -1
		}
		return m, nil
	case "esc":
		m.note = ""
		return m, nil
	case "up", "ctrl+p":
		if m.ta.Line() == 0 && len(m.questions) == 0 && m.histPos > 0 {
			if m.histPos == m.hist.Len() {
				m.draft = m.ta.Value()
			}
			m.histPos--
			m.ta.SetValue(m.hist.At(m.histPos))
			return m, nil
		}
	case "down", "ctrl+n":
		if m.ta.Line() == m.ta.LineCount()-1 && len(m.questions) == 0 && m.histPos < m.hist.Len() {
			m.histPos++
			if m.histPos == m.hist.Len() {
				m.ta.SetValue(m.draft)
			} else {
				m.ta.SetValue(m.hist.At(m.histPos))
			}
			return m, nil
		}
	}
	var cmd tea.Cmd
	m.ta, cmd = m.ta.Update(msg)
	return m, cmd
}

// submit sends what the editor holds: an answer to the pending question,
// or a message or command.
func (m *model) submit() {
	text := m.expand(m.ta.Value())
	if len(m.questions) > 0 {
		q := m.questions[0]
		if !Understood(q.q, text) {
			m.note = fmt.Sprintf("%q is not an answer: type one of %s", strings.TrimSpace(text), strings.Join(q.q.Choices, ", "))
			m.ta.Reset()
			return
		}
		m.note = ""
		q.reply <- strings.TrimSpace(text)
		m.questions = m.questions[1:]
		m.ta.Reset()
		if len(m.questions) == 0 {
			m.ta.SetValue(m.heldDraft)
		}
		return
	}
	if strings.TrimSpace(text) == "" {
		return
	}
	m.note = ""
	m.ta.Reset()
	m.pastes, m.pasteN = map[string]string{}, 0
	m.hist.Add(text) //nolint:errcheck // a history that cannot be saved does not stop the chat
	m.histPos, m.draft = m.hist.Len(), ""
	m.s.push(Event{Kind: Submit, Text: text})
}

// complete completes a slash command, or its first argument, at Tab: one
// candidate is written out; several are completed to their common prefix
// and listed.
func (m *model) complete() {
	v := m.ta.Value()
	if !strings.HasPrefix(v, "/") || strings.Contains(v, "\n") {
		return
	}
	var cands []string
	prefix, word := "", v
	if i := strings.IndexByte(v, ' '); i >= 0 {
		name := v[:i]
		prefix, word = v[:i+1], strings.TrimLeft(v[i+1:], " ")
		prefix = v[:len(v)-len(word)]
		for _, c := range m.s.opts.Commands {
			if c.Name == name {
				for _, w := range c.Words {
					if strings.HasPrefix(w, word) {
						cands = append(cands, w)
					}
				}
			}
		}
	} else {
		for _, c := range m.s.opts.Commands {
			if strings.HasPrefix(c.Name, word) {
				cands = append(cands, c.Name)
			}
		}
	}
	sort.Strings(cands)
	switch len(cands) {
	case 0:
		m.note = "no completion"
	case 1:
		m.ta.SetValue(prefix + cands[0] + " ")
	default:
		common := cands[0]
		for _, c := range cands[1:] {
			for !strings.HasPrefix(c, common) {
				common = common[:len(common)-1]
			}
		}
		if len(common) > len(word) {
			m.ta.SetValue(prefix + common)
		}
		m.completions = cands
	}
}

func (m *model) search(before int) {
	if m.query == "" {
		m.match = -1
		return
	}
	if i, ok := m.hist.Search(m.query, before); ok {
		m.match = i
		m.note = ""
	} else {
		m.note = "no older match"
	}
}

// searchKey handles a key in Ctrl-R search: typing narrows, Ctrl-R goes
// to the next older match, Enter sends the match, Esc or Ctrl-G gives up,
// and other keys take the match into the editor.
func (m *model) searchKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch k := msg.String(); k {
	case "ctrl+r":
		if m.match >= 0 {
			m.search(m.match)
		} else {
			m.search(m.hist.Len())
		}
	case "backspace", "ctrl+h":
		if r := []rune(m.query); len(r) > 0 {
			m.query = string(r[:len(r)-1])
		}
		m.search(m.hist.Len())
	case "esc", "ctrl+g", "ctrl+c":
		m.searching, m.note = false, ""
		m.ta.SetValue(m.saved)
	case "enter":
		m.searching, m.note = false, ""
		if m.match >= 0 {
			m.ta.SetValue(m.hist.At(m.match))
			m.submit()
		} else {
			m.ta.SetValue(m.saved)
		}
	default:
		if msg.Text != "" && msg.Mod&^tea.ModShift == 0 {
			m.query += msg.Text
			m.search(m.hist.Len())
			return m, nil
		}
		m.searching, m.note = false, ""
		if m.match >= 0 {
			m.ta.SetValue(m.hist.At(m.match))
		} else {
			m.ta.SetValue(m.saved)
		}
	}
	return m, nil
}

func (m *model) View() tea.View {
	if m.quitting {
		return tea.NewView("")
	}
	if len(m.questions) > 0 {
		m.ta.Placeholder = "your answer"
	} else {
		m.ta.Placeholder = placeholder
	}
	st := m.s.st
	var b strings.Builder
	b.WriteString("\n") // the conversation above, the prompt below
	if m.live != "" {
		text := trimRight(m.live)
		if m.width > 4 {
			text = ansi.Wrap(text, m.width-3, " ")
		}
		lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
		if len(lines) > liveLines {
			lines = lines[len(lines)-liveLines:]
		}
		for _, l := range lines {
			if m.dim {
				l = st.thinking.Render(l)
			}
			b.WriteString("  " + l + "\n")
		}
	}
	if m.busy {
		label := m.label
		if len(m.tools) > 0 {
			label = "running " + strings.Join(m.tools, ", ")
		}
		el := time.Since(m.since)
		fmt.Fprintf(&b, "%s %s %s  %s\n", st.spinner.Render(spinnerFrames[m.frame%len(spinnerFrames)]), label+"…",
			st.faint.Render(fmt.Sprintf("%.1fs", el.Seconds())), st.faint.Render("Ctrl-C interrupts · Enter sends now · /queue sends after"))
	}
	if len(m.questions) > 0 {
		q := m.questions[0].q
		b.WriteString(st.question.Render("? "+q.Text) + "\n")
		if len(q.Choices) > 0 {
			b.WriteString(st.faint.Render("  answer: "+strings.Join(q.Choices, " / ")) + "\n")
		}
	}
	if m.searching {
		shown := ""
		if m.match >= 0 {
			shown = oneLine(m.hist.At(m.match), m.width-len(m.query)-24)
		}
		fmt.Fprintf(&b, "(reverse-i-search)'%s': %s\n", m.query, shown)
	} else {
		b.WriteString(m.ta.View() + "\n")
	}
	if len(m.completions) > 0 {
		var parts []string
		for _, c := range m.completions {
			parts = append(parts, c+m.helpOf(c))
		}
		b.WriteString(st.faint.Render(ansi.Wrap(strings.Join(parts, "   "), m.width-1, " ")) + "\n")
	}
	if m.note != "" {
		b.WriteString(st.note.Render(m.note) + "\n")
	}
	if m.status != "" {
		b.WriteString(st.status.Render(ansi.Truncate(m.status, m.width-1, "…")))
	}
	return tea.NewView(strings.TrimRight(b.String(), "\n"))
}

func (m *model) helpOf(name string) string {
	for _, c := range m.s.opts.Commands {
		if c.Name == name && c.Help != "" {
			return " — " + oneLine(c.Help, 40)
		}
	}
	return ""
}
