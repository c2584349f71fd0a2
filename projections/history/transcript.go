// Package history owns the message history of a session: the pure fold of
// its events into the OpenAI-format message list the next model call starts
// from (used by the session actor to recover), and the projection that keeps
// that list for every session in the projections database. Both go through
// the same fold, so they cannot disagree.
package history

import (
	"github.com/hermes-go/hermes/schema"
)

// Transcript is one session's history, folded from its events.
type Transcript struct {
	// System is the stable prefix (SystemPromptBuilt); empty until built.
	System string
	// Messages are the conversation after the system message.
	Messages []schema.Message
}

// Change says how one event changed a transcript.
type Change struct {
	// Reset is true when Messages were replaced as a whole.
	Reset bool
	// Appended counts messages added at the end.
	Appended int
	// System is true when the system message changed.
	System bool
}

// Apply folds one event payload into t and says what changed.
func (t *Transcript) Apply(p schema.Payload) Change {
	switch e := p.(type) {
	case schema.SessionStarted:
		t.Messages = append([]schema.Message(nil), e.History...)
		return Change{Reset: true}
	case schema.SystemPromptBuilt:
		t.System = e.Content
		return Change{System: true}
	}
	if m, ok := MessageOf(p); ok {
		t.Messages = append(t.Messages, m)
		if m.Role == "tool" {
			sortResults(t.Messages)
		}
		return Change{Appended: 1}
	}
	return Change{}
}

// The results of one response's tool calls are recorded as each call
// finishes, so in the order they finished; history holds them in the order
// of the calls, which is what the model asked for and what a replay
// reproduces.

// sortResults puts the trailing tool messages of msgs, the results of the
// last assistant message's calls, in the order of those calls. Results
// arrive one at a time, so only the last one can be out of place.
func sortResults(msgs []schema.Message) {
	n := len(msgs) - 1
	first := n
	for first > 0 && msgs[first-1].Role == "tool" {
		first--
	}
	if first == 0 || msgs[first-1].Role != "assistant" {
		return
	}
	order := callOrder(msgs[first-1].ToolCalls)
	last := msgs[n]
	k, ok := order[last.ToolCallID]
	if !ok {
		return // not one of the calls: it stays where it came
	}
	i := n
	for i > first {
		j, ok := order[msgs[i-1].ToolCallID]
		if !ok || j <= k {
			break
		}
		msgs[i] = msgs[i-1]
		i--
	}
	msgs[i] = last
}

func callOrder(calls []schema.ToolCall) map[string]int {
	order := make(map[string]int, len(calls))
	for i, c := range calls {
		if _, dup := order[c.ID]; !dup {
			order[c.ID] = i
		}
	}
	return order
}

// InCallOrder puts every group of tool results in msgs in the order of the
// calls of the assistant message before it (the projection stores them as
// recorded, and orders them as it reads).
func InCallOrder(msgs []schema.Message) {
	for i := range msgs {
		if msgs[i].Role == "tool" {
			sortResults(msgs[:i+1])
		}
	}
}

// SteerPrefix opens the user message a /steer adds mid-turn, so the model
// reads it as guidance on the work in hand, not a new request.
const SteerPrefix = "[Guidance from the user while you work; take it into account and carry on] "

// MessageOf returns the message an event adds to history, if it adds one.
func MessageOf(p schema.Payload) (schema.Message, bool) {
	switch e := p.(type) {
	case schema.UserMessageAdded:
		return schema.Message{Role: "user", Content: e.Content, Images: e.Images}, true
	case schema.AssistantMessageAdded:
		return schema.Message{Role: "assistant", Content: e.Content, Reasoning: e.Reasoning, ToolCalls: e.ToolCalls}, true
	case schema.ToolResultAdded:
		return schema.Message{Role: "tool", Content: e.Content, ToolCallID: e.CallID, Name: e.Name}, true
	case schema.TurnSteered:
		return schema.Message{Role: "user", Content: SteerPrefix + e.Text}, true
	}
	return schema.Message{}, false
}

// Full is the message list with the system message first, as a model call
// would start from before any ephemeral layer is added.
func (t *Transcript) Full() []schema.Message {
	out := make([]schema.Message, 0, len(t.Messages)+1)
	if t.System != "" {
		out = append(out, schema.Message{Role: "system", Content: t.System})
	}
	return append(out, t.Messages...)
}

// Fold builds a transcript from a session's payloads in stream order.
func Fold(payloads []schema.Payload) *Transcript {
	t := &Transcript{}
	for _, p := range payloads {
		t.Apply(p)
	}
	return t
}
