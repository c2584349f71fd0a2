// Package replay re-runs a recorded session through the turn loop with the
// recorded model responses and tool results in place of live calls — no
// network, no side effects — and checks that the loop makes the same
// decisions and emits the same events. It is the proof that the loop is a
// deterministic function of its inputs.
package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/schema"
)

// Divergence is the first place where the replay differs from the record.
type Divergence struct {
	// Revision is the recorded event's revision in its stream.
	Revision uint64
	Expected string
	Got      string
}

func (d *Divergence) Error() string {
	return fmt.Sprintf("replay diverges at event %d:\n  expected %s\n  got      %s", d.Revision, d.Expected, d.Got)
}

// Report is the outcome of a replay.
type Report struct {
	Turns  int
	Events int
	Calls  int
}

type recorded struct {
	rev     uint64
	payload schema.Payload
}

// normal renders a payload for comparison, without the fields that
// legitimately differ between runs (durations, prices of the day).
func normal(p schema.Payload) string {
	switch e := p.(type) {
	case schema.ToolResultAdded:
		e.DurationMS = 0
		p = e
	case schema.AssistantMessageAdded:
		e.CostUSD = 0
		p = e
	}
	b, _ := json.Marshal(p)
	return p.EventType() + " " + string(b)
}

// Run replays the session whose events are evs (one stream, in order).
func Run(ctx context.Context, evs []events.Recorded, toolNames []string) (Report, error) {
	var rep Report
	var recs []recorded
	for _, r := range evs {
		if r.IsTombstone() {
			return rep, fmt.Errorf("the session was deleted")
		}
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return rep, &events.CorruptEventError{Stream: r.Stream, Revision: r.Revision, Position: r.Position, Err: err}
		}
		recs = append(recs, recorded{r.Revision, p})
	}
	t := &history.Transcript{}
	i := 0
	// The opening events are state, not decisions.
	for i < len(recs) {
		switch recs[i].payload.(type) {
		case schema.SessionStarted, schema.SystemPromptBuilt:
			t.Apply(recs[i].payload)
			i++
			continue
		}
		break
	}
	maxTurns := 90
	for _, r := range recs {
		if w, ok := r.payload.(schema.BudgetWarning); ok {
			maxTurns = w.Max
		}
	}
	if toolNames == nil {
		toolNames = knownTools(recs)
	}
	servers := map[string]string{} // the MCP server of each tool, as recorded
	for _, r := range recs {
		if s, ok := r.payload.(schema.ToolCallStarted); ok && s.Server != "" {
			servers[s.Name] = s.Server
		}
	}
	tools := make([]tool.Tool, 0, len(toolNames))
	for _, n := range toolNames {
		tools = append(tools, stubTool{n, servers[n]})
	}
	for i < len(recs) {
		u, ok := recs[i].payload.(schema.UserMessageAdded)
		if !ok {
			// Events between turns (memory, titles, compression) are not
			// produced by the loop: take them as they are.
			t.Apply(recs[i].payload)
			i++
			continue
		}
		end := i + 1
		for end < len(recs) {
			if _, ok := recs[end].payload.(schema.UserMessageAdded); ok {
				break
			}
			end++
		}
		turn := recs[i:end]
		cmp := &comparer{want: turn}
		prov := newProvider(turn)
		tctx, cancel := context.WithCancelCause(ctx)
		prov.cancel = cancel
		if ti, ok := turn[len(turn)-1].payload.(schema.TurnInterrupted); ok {
			prov.interrupt = ti.Reason
		}
		loop := &agent.Loop{Provider: prov, Tools: tool.NewTools(tools...), Exec: &executor{results: results(turn)}, Rec: cmp,
			Budget: tool.NewBudget(maxTurns), Cfg: agent.Config{Model: prov.model(), BudgetWarningAt: warningAt(turn, maxTurns), NoEstimate: true},
			NewID: func() string { return "" }, Steered: func() []string { return cmp.steered(prov) }}
		_, err := loop.TurnMessage(tctx, t, "replay", u)
		cancel(nil)
		if cmp.div != nil {
			return rep, cmp.div
		}
		if err != nil && !isRecordedEnd(turn, err) {
			return rep, fmt.Errorf("turn at event %d: %w", turn[0].rev, err)
		}
		for cmp.n < len(turn) && !loopEvent(turn[cmp.n].payload) {
			cmp.n++
		}
		if cmp.n < len(turn) {
			return rep, &Divergence{Revision: turn[cmp.n].rev, Expected: normal(turn[cmp.n].payload), Got: "(the loop stopped here)"}
		}
		rep.Turns++
		rep.Events += len(turn)
		rep.Calls += prov.calls
		i = end
	}
	return rep, nil
}

// knownTools are the tools the record shows were registered: the names of
// dispatched calls that did not come back as unknown.
func knownTools(recs []recorded) []string {
	unknown := map[string]bool{}
	for _, r := range recs {
		if t, ok := r.payload.(schema.ToolResultAdded); ok && strings.HasPrefix(t.Error, "Unknown tool") {
			unknown[t.CallID] = true
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, r := range recs {
		if s, ok := r.payload.(schema.ToolCallStarted); ok && !unknown[s.CallID] && !seen[s.Name] {
			seen[s.Name] = true
			out = append(out, s.Name)
		}
	}
	return out
}

// isRecordedEnd tells an error the record also ended with (an interrupted
// turn replays as interrupted).
func isRecordedEnd(turn []recorded, err error) bool {
	_, ok := turn[len(turn)-1].payload.(schema.TurnInterrupted)
	return ok
}

// warningAt recovers the warning threshold from a recorded BudgetWarning.
func warningAt(turn []recorded, max int) float64 {
	for _, r := range turn {
		if w, ok := r.payload.(schema.BudgetWarning); ok && w.Max > 0 {
			return float64(w.Used) / float64(w.Max)
		}
	}
	return 0
}

// comparer is the Recorder of a replay: each event the loop emits must be
// the next recorded one.
type comparer struct {
	mu   sync.Mutex
	want []recorded
	n    int
	div  *Divergence
}

func (c *comparer) Record(_ context.Context, _ string, ps ...schema.Payload) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range ps {
		if c.div != nil {
			return c.div
		}
		if c.n >= len(c.want) {
			c.div = &Divergence{Revision: c.want[len(c.want)-1].rev + 1, Expected: "(no more events in this turn)", Got: normal(p)}
			return c.div
		}
		for c.n < len(c.want) && !loopEvent(c.want[c.n].payload) {
			c.n++
		}
		if c.n >= len(c.want) {
			c.div = &Divergence{Revision: c.want[len(c.want)-1].rev + 1, Expected: "(no more events in this turn)", Got: normal(p)}
			return c.div
		}
		c.matchResult(p)
		w := c.want[c.n]
		if got, exp := normal(p), normal(w.payload); got != exp && !reflect.DeepEqual(p, w.payload) {
			c.div = &Divergence{Revision: w.rev, Expected: exp, Got: got}
			return c.div
		}
		c.n++
	}
	return nil
}

// steered hands the loop the user's guidance (/steer) where the record has
// it next: before a model call, or right after an answer the provider has
// handed out (the guidance arrived while the model wrote it, and the turn
// went on).
func (c *comparer) steered(p *provider) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.n
	for k < len(c.want) && !loopEvent(c.want[k].payload) {
		k++
	}
	if k < len(c.want) {
		if _, ok := c.want[k].payload.(schema.AssistantMessageAdded); ok {
			answered := 0
			for _, w := range c.want[:k] {
				if _, ok := w.payload.(schema.AssistantMessageAdded); ok {
					answered++
				}
			}
			p.mu.Lock()
			handed := p.handled
			p.mu.Unlock()
			if handed <= answered {
				return nil // the model has not answered this step yet
			}
			k++
		}
	}
	var out []string
	for ; k < len(c.want); k++ {
		s, ok := c.want[k].payload.(schema.TurnSteered)
		if !ok {
			break
		}
		out = append(out, s.Text)
	}
	return out
}

// matchResult brings the recorded result of p's call to the front when p
// is a tool result: the results of one response's calls are recorded as
// the calls finish, so their order is the tools' timing, not a decision of
// the loop, and any order of them replays.
func (c *comparer) matchResult(p schema.Payload) {
	got, ok := p.(schema.ToolResultAdded)
	if !ok {
		return
	}
	for k := c.n; k < len(c.want); k++ {
		w, ok := c.want[k].payload.(schema.ToolResultAdded)
		if !ok {
			if loopEvent(c.want[k].payload) {
				return // the group of results ended
			}
			continue // an event a tool recorded meanwhile
		}
		if w.CallID == got.CallID {
			c.want[c.n], c.want[k] = c.want[k], c.want[c.n]
			return
		}
	}
}

// loopEvent tells the events the loop itself emits from those recorded by
// tools, the ladder or the session (memory, approvals, subagents, ...).
func loopEvent(p schema.Payload) bool {
	switch p.(type) {
	case schema.UserMessageAdded, schema.AssistantMessageAdded, schema.ToolCallStarted, schema.ToolResultAdded,
		schema.TurnCompleted, schema.TurnInterrupted, schema.BudgetWarning, schema.TurnSteered:
		return true
	}
	return false
}

// provider answers with the turn's recorded model responses, in order.
// A message that took several HTTP calls (continuations after an output
// limit, a cut tool call asked again) is handed out as that many calls:
// the first ones empty and cut by the limit, the last one the whole
// message, so the loop joins them into the same message and takes the
// same share of the budget.
type provider struct {
	mu      sync.Mutex
	answers []schema.AssistantMessageAdded
	// parts[i] is the number of calls of answers[i]; given counts the
	// calls of the current answer handed out so far.
	parts   []int
	given   int
	calls   int
	handled int // answers fully handed out
	// A turn recorded as interrupted is interrupted again, with the
	// recorded reason, when its responses run out.
	cancel    context.CancelCauseFunc
	interrupt string
}

func newProvider(turn []recorded) *provider {
	p := &provider{}
	for _, r := range turn {
		if a, ok := r.payload.(schema.AssistantMessageAdded); ok {
			p.answers = append(p.answers, a)
			n := max(a.Calls, 1)
			if a.Calls == 0 && a.FinishReason == "length" {
				// Recorded before calls were counted: a message still cut
				// off took the loop's continuations too.
				n = 1 + maxContinuations
			}
			p.parts = append(p.parts, n)
		}
	}
	return p
}

// maxContinuations is the loop's default number of continuations.
const maxContinuations = 3

func (p *provider) model() string {
	if len(p.answers) > 0 {
		return p.answers[0].Model
	}
	return ""
}

// next is the answer the loop is recording: the last one handed out.
func (p *provider) next() (schema.AssistantMessageAdded, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.handled == 0 || p.handled > len(p.answers) {
		return schema.AssistantMessageAdded{}, false
	}
	return p.answers[p.handled-1], true
}

func (p *provider) Name() string {
	if a, ok := p.next(); ok {
		return a.Provider
	}
	return ""
}

func (p *provider) APIMode() string {
	if a, ok := p.next(); ok {
		return a.APIMode
	}
	return ""
}

func (p *provider) Complete(ctx context.Context, req model.Request, onDelta func(model.Delta)) (model.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.handled >= len(p.answers) {
		if p.interrupt != "" {
			p.cancel(agent.Cause(p.interrupt))
			return model.Response{}, context.Cause(ctx)
		}
		return model.Response{}, &model.ProviderError{Provider: "replay", Status: 500, Message: "the record has no further model response"}
	}
	a := p.answers[p.handled]
	p.calls++
	p.given++
	if p.given < p.parts[p.handled] {
		return model.Response{FinishReason: "length", Model: a.Model}, nil
	}
	p.given = 0
	p.handled++
	finish := a.FinishReason
	if finish == "" {
		finish = "stop"
	}
	// Reasoning goes back as the provider's reasoning, exactly as recorded
	// (through <think> tags it would be trimmed).
	return model.Response{Content: a.Content, Reasoning: a.Reasoning, ToolCalls: a.ToolCalls, FinishReason: finish, Usage: a.Usage, Model: a.Model}, nil
}

// executor returns the recorded tool results by call id.
type executor struct {
	results map[string]schema.ToolResultAdded
}

func results(turn []recorded) map[string]schema.ToolResultAdded {
	m := map[string]schema.ToolResultAdded{}
	for _, r := range turn {
		if t, ok := r.payload.(schema.ToolResultAdded); ok {
			m[t.CallID] = t
		}
	}
	return m
}

func (e *executor) Execute(_ context.Context, c tool.Call) tool.Result {
	r, ok := e.results[c.ID]
	if !ok {
		return tool.Result{Err: "replay: no recorded result for call " + c.ID}
	}
	// The loop adds "Error: ..." to the content itself; give it back the
	// parts it started from.
	content := r.Content
	if r.Error != "" {
		content = trimErr(content, r.Error)
	}
	return tool.Result{Content: content, Err: r.Error, Interrupted: r.Interrupted}
}

func trimErr(content, errText string) string {
	suffix := "Error: " + errText
	if content == suffix {
		return ""
	}
	if n := len(content) - len(suffix) - 2; n >= 0 && content[n:] == "\n\n"+suffix {
		return content[:n]
	}
	return content
}

// stubTool stands for a registered tool; the executor never runs it.
type stubTool struct{ name, server string }

func (s stubTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: s.name, Parameters: map[string]any{"type": "object"}}
}
func (s stubTool) Flags() tool.Flags { return tool.Flags{Server: s.server} }
func (stubTool) Run(context.Context, json.RawMessage) (string, error) {
	return "", fmt.Errorf("replay never runs tools")
}
