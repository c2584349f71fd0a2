package dashboard

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Bar is one span of a turn's timeline: a model call or a tool call.
type Bar struct {
	Kind     string // "model" or "tool"
	Label    string
	Detail   string // the tooltip: duration, tokens, cost, cache hits
	Revision uint64 // the event that ends the span (the fork point)
	Lane     int    // 0 for model calls; tool calls from 1 (parallel lanes)
	Start    time.Duration
	End      time.Duration
	Failed   bool
}

// Mark is one instant of a turn's timeline: a retry, a fallback, a
// compression, an approval, a subagent, a budget warning, an interruption.
type Mark struct {
	Kind     string
	Label    string
	Revision uint64
	At       time.Duration
}

// Turn is the timeline of one turn.
type Turn struct {
	ID       string
	Start    time.Time
	Span     time.Duration
	Bars     []Bar
	Marks    []Mark
	Lanes    int // tool lanes in use
	Model    int // model calls
	Tools    int // tool calls
	Tokens   int64
	CostUSD  float64
	Outcome  string
	FirstRev uint64
}

// Entry is one item of the conversation as a person reads it.
type Entry struct {
	Role      string // user, assistant, tool, note
	Content   string
	Reasoning string
	Calls     []schema.ToolCall
	Tool      string // a tool result's tool
	CallID    string
	Error     string
	Revision  uint64
	Time      time.Time
	Inherited bool // history a child session started from
}

// View is a session's events read for the page.
type View struct {
	Entries []Entry
	Turns   []Turn
	Events  int
	Last    uint64
	// Axis is the time axis all the turns' timelines share.
	Axis Axis
}

// Axis is the one time scale of a session's timelines: every turn is drawn
// from its start on the same scale, so that spans of different turns
// compare at a glance. It runs from 0 to End, a round value at or past the
// longest turn, with a tick every Step.
type Axis struct {
	End   time.Duration
	Step  time.Duration
	Ticks []Tick
}

// Tick is one mark of the axis: an offset from a turn's start.
type Tick struct {
	At    time.Duration
	Label string
}

// tickSteps are the steps an axis may take, shortest first.
var tickSteps = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// maxTicks is the most intervals an axis is cut into.
const maxTicks = 6

// axisFor returns the axis for turns whose longest span is longest: the
// shortest step that cuts it into at most maxTicks intervals, and the end
// rounded up to a whole step. A session without time (no turns, or only
// instants) gets no axis.
func axisFor(longest time.Duration) Axis {
	if longest <= 0 {
		return Axis{}
	}
	step := tickSteps[len(tickSteps)-1]
	for _, s := range tickSteps {
		if longest <= s*maxTicks {
			step = s
			break
		}
	}
	n := int((longest + step - 1) / step)
	a := Axis{End: time.Duration(n) * step, Step: step}
	for i := 0; i <= n; i++ {
		at := time.Duration(i) * step
		a.Ticks = append(a.Ticks, Tick{At: at, Label: tickLabel(at, step)})
	}
	return a
}

// tickLabel writes an offset in the unit its step is counted in.
func tickLabel(d, step time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case step < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	case step < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
	case step < time.Hour:
		return strconv.FormatFloat(d.Minutes(), 'f', -1, 64) + " min"
	}
	return strconv.FormatFloat(d.Hours(), 'f', -1, 64) + " h"
}

// openSpan is a tool call started and not yet finished.
type openSpan struct {
	at time.Time
}

// build reads a session's events into its conversation and timeline. An
// event whose payload cannot be decoded becomes a note, never an error:
// the page shows what it can.
func build(evs []events.Recorded) View {
	var v View
	v.Events = len(evs)
	var cur *Turn
	var lastAt time.Time // the end of the previous step of the turn
	open := map[string]openSpan{}
	flush := func() {
		if cur != nil {
			cur.Lanes = assignLanes(cur.Bars)
			v.Turns = append(v.Turns, *cur)
			cur = nil
		}
	}
	for _, r := range evs {
		v.Last = r.Revision
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			v.Entries = append(v.Entries, Entry{Role: "note", Content: fmt.Sprintf("event %d (%s) cannot be read: %v", r.Revision, r.Type, err), Revision: r.Revision, Time: r.Time})
			continue
		}
		if r.TurnID != "" && (cur == nil || cur.ID != r.TurnID) {
			flush()
			cur = &Turn{ID: r.TurnID, Start: r.Time, FirstRev: r.Revision}
			lastAt = r.Time
			clear(open)
		}
		at := func() time.Duration {
			if cur == nil {
				return 0
			}
			d := r.Time.Sub(cur.Start)
			if d < 0 {
				d = 0
			}
			if d > cur.Span {
				cur.Span = d
			}
			return d
		}
		mark := func(kind, label string) {
			if cur != nil {
				cur.Marks = append(cur.Marks, Mark{Kind: kind, Label: label, Revision: r.Revision, At: at()})
			}
		}
		switch e := p.(type) {
		case schema.SessionStarted:
			for _, m := range e.History {
				v.Entries = append(v.Entries, Entry{Role: m.Role, Content: m.Content, Reasoning: m.Reasoning, Calls: m.ToolCalls,
					Tool: m.Name, CallID: m.ToolCallID, Revision: r.Revision, Time: r.Time, Inherited: true})
			}
		case schema.UserMessageAdded:
			v.Entries = append(v.Entries, Entry{Role: "user", Content: e.Content, Revision: r.Revision, Time: r.Time})
			if cur != nil {
				lastAt = r.Time
			}
		case schema.AssistantMessageAdded:
			v.Entries = append(v.Entries, Entry{Role: "assistant", Content: e.Content, Reasoning: e.Reasoning, Calls: e.ToolCalls, Revision: r.Revision, Time: r.Time})
			if cur == nil {
				break
			}
			start := lastAt.Sub(cur.Start)
			end := at()
			if start < 0 || start > end {
				start = end
			}
			u := e.Usage
			detail := fmt.Sprintf("model call %s: %s, %d prompt + %d completion tokens, %d cache read, $%.4f", e.Model, end-start, u.PromptTokens, u.CompletionTokens, u.CacheReadTokens, e.CostUSD)
			cur.Bars = append(cur.Bars, Bar{Kind: "model", Label: e.Model, Detail: detail, Revision: r.Revision, Start: start, End: end})
			cur.Model++
			cur.Tokens += u.Total()
			cur.CostUSD += e.CostUSD
			if e.Calls > 1 {
				mark("retry", fmt.Sprintf("%d HTTP calls for one answer", e.Calls))
			}
			lastAt = r.Time
		case schema.ToolCallStarted:
			open[e.CallID] = openSpan{at: r.Time}
			at()
		case schema.ToolResultAdded:
			v.Entries = append(v.Entries, Entry{Role: "tool", Content: e.Content, Tool: e.Name, CallID: e.CallID, Error: e.Error, Revision: r.Revision, Time: r.Time})
			if cur == nil {
				break
			}
			end := at()
			start := end - time.Duration(e.DurationMS)*time.Millisecond
			if o, ok := open[e.CallID]; ok {
				start = o.at.Sub(cur.Start)
				delete(open, e.CallID)
			}
			if start < 0 {
				start = 0
			}
			detail := fmt.Sprintf("tool %s: %s", e.Name, end-start)
			if e.Error != "" {
				detail += ", failed: " + clip(e.Error, 120)
			}
			cur.Bars = append(cur.Bars, Bar{Kind: "tool", Label: e.Name, Detail: detail, Revision: r.Revision, Start: start, End: end, Failed: e.Error != ""})
			cur.Tools++
			if r.Time.After(lastAt) {
				lastAt = r.Time
			}
		case schema.ProviderFallback:
			mark("fallback", fmt.Sprintf("fallback %s/%s → %s/%s: %s", e.FromProvider, e.FromModel, e.ToProvider, e.ToModel, e.Reason))
		case schema.ContextCompressed:
			mark("compression", fmt.Sprintf("compressed %d → %d tokens into %s", e.TokensBefore, e.TokensAfter, e.ChildSessionID))
			v.Entries = append(v.Entries, Entry{Role: "note", Content: "Context compressed; the conversation continues in session " + e.ChildSessionID, Revision: r.Revision, Time: r.Time})
		case schema.ApprovalDecided:
			mark("approval", fmt.Sprintf("approval %s by %s: %s", e.Decision, e.By, clip(e.Command, 80)))
		case schema.BudgetWarning:
			mark("budget", fmt.Sprintf("budget: %d of %d iterations", e.Used, e.Max))
		case schema.SubagentSpawned:
			mark("subagent", "subagent "+e.ChildSessionID+": "+clip(e.Goal, 80))
		case schema.SubagentFinished:
			mark("subagent", "subagent "+e.ChildSessionID+" "+e.Status)
		case schema.TurnInterrupted:
			mark("interrupt", "interrupted: "+e.Reason)
			if cur != nil {
				cur.Outcome = "interrupted"
			}
		case schema.TurnCompleted:
			at()
			if cur != nil {
				cur.Outcome = e.Outcome
				if cur.Outcome == "" {
					cur.Outcome = "completed"
				}
			}
		default:
			if r.TurnID != "" {
				at()
			}
		}
	}
	flush()
	var longest time.Duration
	for _, t := range v.Turns {
		longest = max(longest, t.Span)
	}
	v.Axis = axisFor(longest)
	return v
}

// assignLanes puts each tool bar in the first lane (from 1) free at its
// start, in order of start, so calls that overlapped sit in parallel
// lanes; it returns the number of lanes used.
func assignLanes(bars []Bar) int {
	var idx []int
	for i, b := range bars {
		if b.Kind == "tool" {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return bars[idx[a]].Start < bars[idx[b]].Start })
	var ends []time.Duration
	for _, i := range idx {
		lane := -1
		for l, e := range ends {
			if e < bars[i].Start {
				lane = l
				break
			}
		}
		if lane < 0 {
			ends = append(ends, 0)
			lane = len(ends) - 1
		}
		ends[lane] = bars[i].End
		bars[i].Lane = lane + 1
	}
	return len(ends)
}

// clip shortens s to n runes.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// prettyJSON indents a tool call's JSON arguments; other text stays as it is.
func prettyJSON(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return s
	}
	return string(b)
}
