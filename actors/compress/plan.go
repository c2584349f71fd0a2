// Package compress is context compression as plain logic: estimate the
// prompt's tokens, decide which messages are protected (the head, a tail
// sized by token budget, never splitting a tool call from its results),
// prune bulky tool output in the middle, and summarise the middle into one
// reference-only message whose role keeps the roles alternating.
package compress

import (
	"github.com/hermes-go/hermes/schema"
)

// Config is the compression: section of config.yaml.
type Config struct {
	Enabled       bool    `yaml:"enabled"`
	Threshold     float64 `yaml:"threshold"`
	TargetRatio   float64 `yaml:"target_ratio"`
	ProtectFirstN int     `yaml:"protect_first_n"`
	ProtectLastN  int     `yaml:"protect_last_n"`
}

// WithDefaults fills in the seeds' defaults.
func (c Config) WithDefaults() Config {
	if c.Threshold <= 0 {
		c.Threshold = 0.50
	}
	if c.TargetRatio <= 0 {
		c.TargetRatio = 0.20
	}
	if c.ProtectFirstN <= 0 {
		c.ProtectFirstN = 3
	}
	if c.ProtectLastN <= 0 {
		c.ProtectLastN = 20
	}
	return c
}

// minTail is the fewest messages the tail keeps.
const minTail = 3

// Estimate is the rough token count of a message: characters/4 plus the
// per-message overhead of the chat format.
func Estimate(m schema.Message) int {
	n := len(m.Content) + len(m.Reasoning)
	for _, tc := range m.ToolCalls {
		n += len(tc.Function.Name) + len(tc.Function.Arguments) + 16
	}
	return n/4 + 4
}

// EstimateAll sums Estimate over msgs.
func EstimateAll(msgs []schema.Message) int {
	n := 0
	for _, m := range msgs {
		n += Estimate(m)
	}
	return n
}

// groupStart returns the index where the tool group holding i starts:
// for a tool message, its assistant message; otherwise i itself.
func groupStart(msgs []schema.Message, i int) int {
	for i > 0 && i < len(msgs) && msgs[i].Role == "tool" {
		i--
	}
	return i
}

// groupEnd returns the index just past the tool group that starts at or
// contains i (an assistant with tool calls and its results).
func groupEnd(msgs []schema.Message, i int) int {
	if i >= len(msgs) {
		return len(msgs)
	}
	j := i
	for j < len(msgs) && msgs[j].Role == "tool" {
		j++
	}
	if j > i {
		return j
	}
	if len(msgs[i].ToolCalls) > 0 {
		j = i + 1
		for j < len(msgs) && msgs[j].Role == "tool" {
			j++
		}
		return j
	}
	return i + 1
}

// Plan splits msgs (the history after the system message) into a
// protected head msgs[:head], a middle to summarise msgs[head:tail], and a
// protected tail msgs[tail:]. tailBudget is the token budget of the tail.
// ok is false when there is no middle to compress.
func Plan(msgs []schema.Message, c Config, tailBudget int) (head, tail int, ok bool) {
	return PlanWith(msgs, c, tailBudget, Estimate)
}

// PlanWith is Plan with a token counter of its own (a real tokenizer).
func PlanWith(msgs []schema.Message, c Config, tailBudget int, count func(schema.Message) int) (head, tail int, ok bool) {
	c = c.WithDefaults()
	n := len(msgs)
	// Head: the first N messages, extended to the end of a tool group it
	// would otherwise cut.
	head = min(c.ProtectFirstN, n)
	if head > 0 && head < n {
		head = max(head, groupEnd(msgs, groupStart(msgs, head-1)))
		if head < n && msgs[head].Role == "tool" {
			head = groupEnd(msgs, head)
		}
	}
	// Tail: by token budget from the end, between minTail and
	// ProtectLastN messages.
	tail = n
	used := 0
	for tail > head {
		cost := count(msgs[tail-1])
		count := n - tail
		if count >= c.ProtectLastN || (count >= minTail && used+cost > tailBudget) {
			break
		}
		used += cost
		tail--
	}
	// The latest user message is always kept.
	for i := n - 1; i >= head; i-- {
		if msgs[i].Role == "user" {
			tail = min(tail, i)
			break
		}
	}
	// A cut inside a tool group moves before its assistant message.
	tail = groupStart(msgs, tail)
	if tail < head {
		tail = head
	}
	return head, tail, tail > head
}

// Prune replaces bulky tool output with a one-line placeholder.
func Prune(msgs []schema.Message, over int) []schema.Message {
	out := make([]schema.Message, len(msgs))
	for i, m := range msgs {
		if m.Role == "tool" && len(m.Content) > over {
			m.Content = "[tool output pruned: " + m.Name + " returned " + itoa(len(m.Content)) + " characters]"
		}
		out[i] = m
	}
	return out
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// SummaryPrefix marks the summary message as reference-only.
const SummaryPrefix = "[CONTEXT SUMMARY — reference only. Earlier turns of this conversation were compressed into this summary; do not treat it as a new request.]\n\n"

// Assemble joins head, summary and tail, choosing the summary's role so
// that no two messages of the same role are adjacent; when both roles
// would collide, the summary is merged into the first tail message.
func Assemble(head []schema.Message, summary string, tail []schema.Message) []schema.Message {
	text := SummaryPrefix + summary
	out := append([]schema.Message(nil), head...)
	prev, next := "", ""
	if len(head) > 0 {
		prev = head[len(head)-1].Role
		if prev == "tool" {
			prev = "assistant" // a tool result reads as the assistant's turn
		}
	}
	if len(tail) > 0 {
		next = tail[0].Role
	}
	for _, role := range []string{"user", "assistant"} {
		if prev != role && next != role && !(role == "assistant" && next == "tool") {
			out = append(out, schema.Message{Role: role, Content: text})
			return append(out, tail...)
		}
	}
	if len(tail) == 0 {
		return append(out, schema.Message{Role: "user", Content: text})
	}
	merged := append([]schema.Message(nil), tail...)
	merged[0].Content = text + "\n\n" + merged[0].Content
	return append(out, merged...)
}
