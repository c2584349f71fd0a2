package gateway

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/schema"
)

// Display is how a platform's chats see a turn while it runs, beside its
// answer (upstream's display settings). The platform's adapter shows
// previews and progress only where it can edit a message it sent.
type Display struct {
	// Streaming shows the answer as it is written: previews of it, which
	// the adapter edits into one message, and which the answer replaces.
	Streaming bool
	// ToolProgress is a line per tool call while the turn runs: off, new
	// (only when the tool differs from the previous call's), all, or
	// verbose (the call's arguments in full). The lines of a turn are one
	// message, edited as they come.
	ToolProgress string
	// PreviewLength caps the argument shown on a progress line (0: 40
	// characters; in verbose mode 0 shows the arguments whole).
	PreviewLength int
}

// Tool-progress modes (Display.ToolProgress).
const (
	ProgressOff     = "off"
	ProgressNew     = "new"
	ProgressAll     = "all"
	ProgressVerbose = "verbose"
)

// previewEvery is the least time between two previews of an answer the
// router publishes: the adapter paces its edits itself (to the platform's
// limit), this only spares the bus a message per token.
const previewEvery = 250 * time.Millisecond

// defaultPreviewLength is the argument shown on a progress line when
// Display.PreviewLength is 0.
const defaultPreviewLength = 40

// view follows a turn's observations and publishes what a chat shows of
// it while it runs: previews of the answer (by segment: what a model call
// writes after tools ran is a new message) and the progress lines. Its
// observer is called from the turn's goroutines.
type view struct {
	disp    Display
	publish func(schema.Outbound)
	base    schema.Outbound
	now     func() time.Time

	mu        sync.Mutex
	segment   int
	text      strings.Builder
	said      bool
	published string
	last      time.Time
	lines     []string
	lastTool  string
	lastLine  string
	repeats   int
}

func newView(disp Display, base schema.Outbound, now func() time.Time, publish func(schema.Outbound)) *view {
	return &view{disp: disp, base: base, now: now, publish: publish}
}

// observe is the turn's observer.
func (v *view) observe(o agent.Observation) {
	if o.Depth != 0 {
		return // a subagent's work is its parent's tool call
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	switch o.Kind {
	case agent.ObserveStep:
		if v.said {
			// The text before the tools stays as it was written; the next
			// call writes a new message below their progress.
			v.flush()
			v.segment++
			v.text.Reset()
			v.said, v.published = false, ""
		}
	case agent.ObserveDelta:
		if o.Text == "" || !v.disp.Streaming {
			return
		}
		v.text.WriteString(o.Text)
		v.said = true
		if v.now().Sub(v.last) >= previewEvery {
			v.flush()
		}
	case agent.ObserveToolStart:
		v.flush()
		v.progress(o.Tool, o.Text)
	}
}

// flush publishes the segment's text if it changed since the last preview.
func (v *view) flush() {
	t := v.text.String()
	if !v.disp.Streaming || strings.TrimSpace(t) == "" || t == v.published {
		return
	}
	v.published, v.last = t, v.now()
	out := v.base
	out.Kind, out.Text, out.Segment = schema.OutboundPreview, t, v.segment
	v.publish(out)
}

// progress adds the line of a tool call starting and publishes the lines.
func (v *view) progress(tool, args string) {
	mode := v.disp.ToolProgress
	switch mode {
	case ProgressNew, ProgressAll, ProgressVerbose:
	default:
		return
	}
	if mode == ProgressNew && tool == v.lastTool {
		return
	}
	v.lastTool = tool
	line := ProgressLine(mode, tool, args, v.disp.PreviewLength)
	if line == v.lastLine && len(v.lines) > 0 {
		// The same call again: counted on its line, not repeated.
		v.repeats++
		v.lines[len(v.lines)-1] = fmt.Sprintf("%s (×%d)", line, v.repeats+1)
	} else {
		v.lastLine, v.repeats = line, 0
		v.lines = append(v.lines, line)
	}
	out := v.base
	out.Kind, out.Text = schema.OutboundProgress, strings.Join(v.lines, "\n")
	v.publish(out)
}

// answered says which preview segment the answer replaces: the last one,
// if the turn's last model call wrote text into it.
func (v *view) answered() (segment int, replace bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.segment, v.disp.Streaming && v.said && v.published != ""
}

// toolEmoji marks a progress line by what the tool does.
var toolEmoji = map[string]string{
	"terminal": "💻", "process": "⚙️", "execute_code": "🐍",
	"read_file": "📖", "write_file": "✍️", "patch": "🩹", "search_files": "🔎",
	"web_search": "🔍", "web_extract": "🌐", "browser_navigate": "🌐",
	"memory": "🧠", "skill_view": "📚", "skills_list": "📚", "skill_manage": "📚",
	"delegate_task": "🤝", "todo": "📋", "clarify": "❓", "cronjob": "⏰",
	"image_generate": "🎨", "text_to_speech": "🔊", "vision_analyze": "👁️",
	"send_message": "📨", "session_search": "🗂️",
}

// primaryArgs are the arguments a progress line shows first, by name.
var primaryArgs = []string{"command", "query", "url", "path", "file_path", "pattern", "code", "goal", "name", "action", "text", "prompt"}

// ProgressLine is the line a chat shows for a call of tool with args (its
// arguments as JSON, redacted) in mode (all, new or verbose): the tool's
// mark and name and its main argument, cut to previewLength characters
// (0: 40); in verbose mode the argument names and the arguments whole
// (cut only when previewLength is set).
func ProgressLine(mode, tool, args string, previewLength int) string {
	mark := toolEmoji[tool]
	if mark == "" {
		mark = "⚙️"
	}
	var m map[string]any
	_ = json.Unmarshal([]byte(args), &m)
	if mode == ProgressVerbose {
		if len(m) == 0 {
			return mark + " " + tool + "..."
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		shown := strings.TrimSpace(args)
		if previewLength > 0 {
			shown = cut(shown, previewLength)
		}
		return fmt.Sprintf("%s %s(%s)\n%s", mark, tool, strings.Join(keys, ", "), shown)
	}
	preview := mainArg(m)
	if preview == "" {
		return mark + " " + tool + "..."
	}
	if previewLength <= 0 {
		previewLength = defaultPreviewLength
	}
	return mark + " " + tool + ": \"" + cut(preview, previewLength) + "\""
}

// mainArg is the argument a progress line shows: a known one by name, else
// the first text argument by name.
func mainArg(m map[string]any) string {
	for _, k := range primaryArgs {
		if s, ok := m[k].(string); ok && strings.TrimSpace(s) != "" {
			return oneLine(s)
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if s, ok := m[k].(string); ok && strings.TrimSpace(s) != "" {
			return oneLine(s)
		}
	}
	return ""
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// cut shortens s to n characters, the last three of them "...".
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 3 {
		return string(r[:n])
	}
	return string(r[:n-3]) + "..."
}
