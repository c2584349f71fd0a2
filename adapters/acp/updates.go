package acp

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/actors/agent"
)

// outbox sends a prompt's updates in order on its own goroutine, so that a
// turn never waits on the client reading its stdin.
type outbox struct {
	mu     sync.Mutex
	cond   *sync.Cond
	queue  []sdk.SessionUpdate
	busy   bool // an update is being sent
	closed bool
	done   chan struct{}
}

func newOutbox(send func(sdk.SessionUpdate)) *outbox {
	o := &outbox{done: make(chan struct{})}
	o.cond = sync.NewCond(&o.mu)
	go func() {
		defer close(o.done)
		o.mu.Lock()
		defer o.mu.Unlock()
		for {
			for len(o.queue) == 0 && !o.closed {
				o.cond.Wait()
			}
			if len(o.queue) == 0 {
				return
			}
			u := o.queue[0]
			o.queue = o.queue[1:]
			o.busy = true
			o.mu.Unlock()
			send(u)
			o.mu.Lock()
			o.busy = false
			o.cond.Broadcast()
		}
	}()
	return o
}

// push queues u; after close it is dropped.
func (o *outbox) push(u sdk.SessionUpdate) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	o.queue = append(o.queue, u)
	o.cond.Broadcast()
}

// flush waits until everything queued so far was sent.
func (o *outbox) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for (len(o.queue) > 0 || o.busy) && !o.closed {
		o.cond.Wait()
	}
}

// close sends what is queued and stops.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.cond.Broadcast()
	o.mu.Unlock()
	<-o.done
}

// toolInfo is what the client was told of a tool call in flight.
type toolInfo struct {
	title     string
	kind      sdk.ToolKind
	input     any
	locations []sdk.ToolCallLocation
	// before is the file an edit touches as it was when the call
	// started, for the diff shown when it ends.
	before *snapshot
	// terminal is the editor's terminal showing the call's command live
	// (MirrorTerminal), "" when none.
	terminal string
}

// snapshot is a text file's content at one moment (absent: it did not
// exist).
type snapshot struct {
	path    string
	text    string
	absent  bool
	tooBig  bool
	invalid bool
}

// maxDiff bounds the files whose edits are shown as diffs.
const maxDiff = 256 << 10

// snap reads path for a diff; a file too big or not text is not diffed.
func snap(path string) *snapshot {
	s := &snapshot{path: path}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.absent = true
		return s
	case err != nil || !fi.Mode().IsRegular():
		s.invalid = true
		return s
	case fi.Size() > maxDiff:
		s.tooBig = true
		return s
	}
	b, err := os.ReadFile(path)
	if err != nil || !utf8.Valid(b) {
		s.invalid = true
		return s
	}
	s.text = string(b)
	return s
}

// diff is the edit from s to the file as it is now, if both are text.
func (s *snapshot) diff() (sdk.ToolCallContent, bool) {
	if s == nil || s.tooBig || s.invalid {
		return sdk.ToolCallContent{}, false
	}
	after := snap(s.path)
	if after.absent || after.tooBig || after.invalid || (!s.absent && after.text == s.text) {
		return sdk.ToolCallContent{}, false
	}
	if s.absent {
		return sdk.ToolDiffContent(s.path, after.text), true
	}
	return sdk.ToolDiffContent(s.path, after.text, s.text), true
}

// observer turns a turn's observations into session updates.
func (a *Agent) observer(s *state, out *outbox) agent.Observer {
	return func(o agent.Observation) {
		switch o.Kind {
		case agent.ObserveDelta:
			if o.Depth == 0 && o.Text != "" {
				out.push(sdk.UpdateAgentMessageText(o.Text))
			}
		case agent.ObserveReasoning:
			if o.Depth == 0 && o.Text != "" {
				out.push(sdk.UpdateAgentThoughtText(o.Text))
			}
		case agent.ObserveToolStart:
			info := describe(o.Tool, o.Text, s.cwd)
			if info.kind == sdk.ToolKindEdit && len(info.locations) == 1 {
				// Read before the call runs: an edit the tool makes is
				// shown to the editor as a diff.
				info.before = snap(info.locations[0].Path)
			}
			a.mu.Lock()
			s.calls[o.ID] = info
			a.mu.Unlock()
			out.push(sdk.StartToolCall(sdk.ToolCallId(o.ID), info.title, sdk.WithStartKind(info.kind),
				sdk.WithStartStatus(sdk.ToolCallStatusInProgress), sdk.WithStartRawInput(info.input),
				sdk.WithStartLocations(info.locations)))
		case agent.ObserveToolEnd:
			a.mu.Lock()
			info := s.calls[o.ID]
			delete(s.calls, o.ID)
			a.mu.Unlock()
			status, text := sdk.ToolCallStatusCompleted, o.Text
			if o.Err != "" {
				status, text = sdk.ToolCallStatusFailed, o.Err
			}
			var content []sdk.ToolCallContent
			if info.terminal != "" {
				// The editor's terminal shows the output; the text is
				// said only when the call failed.
				content = append(content, sdk.ToolTerminalRef(info.terminal))
				if o.Err == "" {
					text = ""
				}
			}
			if text != "" {
				content = append(content, sdk.ToolContent(sdk.TextBlock(text)))
			}
			if o.Err == "" {
				// Only an edit the tool was allowed to make is shown.
				if d, ok := info.before.diff(); ok {
					content = append(content, d)
				}
			}
			opts := []sdk.ToolCallUpdateOpt{sdk.WithUpdateStatus(status)}
			if len(content) > 0 {
				opts = append(opts, sdk.WithUpdateContent(content))
			}
			out.push(sdk.UpdateToolCall(sdk.ToolCallId(o.ID), opts...))
		}
	}
}

// kinds are the ACP kinds of Hermes' built-in tools; others are "other".
var kinds = map[string]sdk.ToolKind{
	"read_file":      sdk.ToolKindRead,
	"skill_view":     sdk.ToolKindRead,
	"skills_list":    sdk.ToolKindRead,
	"write_file":     sdk.ToolKindEdit,
	"patch":          sdk.ToolKindEdit,
	"skill_manage":   sdk.ToolKindEdit,
	"search_files":   sdk.ToolKindSearch,
	"session_search": sdk.ToolKindSearch,
	"web_search":     sdk.ToolKindSearch,
	"terminal":       sdk.ToolKindExecute,
	"process":        sdk.ToolKindExecute,
	"execute_code":   sdk.ToolKindExecute,
	"web_extract":    sdk.ToolKindFetch,
	"todo":           sdk.ToolKindThink,
}

// describe names a tool call for the editor from its tool and its
// arguments (as recorded: JSON, secrets redacted): a title, a kind, the
// arguments, and the files it touches, absolute, under cwd when relative.
func describe(name, args, cwd string) toolInfo {
	info := toolInfo{title: name, kind: sdk.ToolKindOther}
	if k, ok := kinds[name]; ok {
		info.kind = k
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(args), &m); err != nil {
		if args != "" {
			info.input = args
		}
		return info
	}
	info.input = m
	for _, key := range []string{"command", "path", "query", "pattern", "url", "goal", "action"} {
		if v, ok := m[key].(string); ok && v != "" {
			info.title = name + ": " + clip(v, 80)
			break
		}
	}
	if p, ok := m["path"].(string); ok && p != "" && name != "terminal" {
		if !filepath.IsAbs(p) && cwd != "" {
			p = filepath.Join(cwd, p)
		}
		loc := sdk.ToolCallLocation{Path: p}
		if off, ok := m["offset"].(float64); ok && off >= 1 {
			line := int(off)
			loc.Line = &line
		}
		info.locations = []sdk.ToolCallLocation{loc}
	}
	return info
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
