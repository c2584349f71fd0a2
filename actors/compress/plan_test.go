package compress

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/schema"
)

// randomHistory makes a valid history: user, then assistant turns that
// may call tools (with all their results), of random sizes.
func randomHistory(rng *rand.Rand, turns int) []schema.Message {
	var msgs []schema.Message
	id := 0
	for t := 0; t < turns; t++ {
		msgs = append(msgs, schema.Message{Role: "user", Content: strings.Repeat("u", rng.IntN(400)+1)})
		for k := rng.IntN(3); k > 0; k-- {
			a := schema.Message{Role: "assistant"}
			calls := rng.IntN(3) + 1
			for c := 0; c < calls; c++ {
				id++
				a.ToolCalls = append(a.ToolCalls, schema.ToolCall{ID: fmt.Sprint(id), Type: "function", Function: schema.FunctionCall{Name: "t", Arguments: "{}"}})
			}
			msgs = append(msgs, a)
			for _, tc := range a.ToolCalls {
				msgs = append(msgs, schema.Message{Role: "tool", ToolCallID: tc.ID, Content: strings.Repeat("r", rng.IntN(3000))})
			}
		}
		msgs = append(msgs, schema.Message{Role: "assistant", Content: strings.Repeat("a", rng.IntN(600)+1)})
	}
	if rng.IntN(2) == 0 {
		msgs = append(msgs, schema.Message{Role: "user", Content: "latest question"})
	}
	return msgs
}

// TestPlanProperties checks, over many random histories and budgets, that
// protected messages stay verbatim, tool groups are never split, the tail
// keeps its bounds and the latest user message.
func TestPlanProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 7))
	for iter := 0; iter < 3000; iter++ {
		msgs := randomHistory(rng, 1+rng.IntN(25))
		c := Config{ProtectFirstN: 1 + rng.IntN(5), ProtectLastN: 3 + rng.IntN(25)}
		budget := rng.IntN(5000)
		head, tail, ok := Plan(msgs, c, budget)
		if head < min(c.ProtectFirstN, len(msgs)) || tail > len(msgs) || head > tail {
			t.Fatalf("iter %d: head %d tail %d of %d", iter, head, tail, len(msgs))
		}
		if !ok {
			continue
		}
		// No tool group split at either cut.
		for _, cut := range []int{head, tail} {
			if cut < len(msgs) && msgs[cut].Role == "tool" {
				t.Fatalf("iter %d: cut at %d lands inside a tool group", iter, cut)
			}
		}
		// The latest user message is in the tail.
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Role == "user" {
				if i < tail && i >= head {
					t.Fatalf("iter %d: latest user message %d compressed (tail %d)", iter, i, tail)
				}
				break
			}
		}
		// The tail has at least minTail messages unless the head holds them.
		if len(msgs)-tail < minTail && tail > head {
			t.Fatalf("iter %d: tail of %d messages", iter, len(msgs)-tail)
		}
		// Assembled history is valid: protected messages verbatim, every
		// tool result right after its call's assistant group.
		out := Assemble(msgs[:head], "summary", msgs[tail:])
		for i := 0; i < head; i++ {
			if out[i].Content != msgs[i].Content || out[i].Role != msgs[i].Role {
				t.Fatalf("iter %d: head message %d changed", iter, i)
			}
		}
		off := len(out) - (len(msgs) - tail)
		for i := tail + 1; i < len(msgs); i++ {
			if out[off+i-tail].Content != msgs[i].Content {
				t.Fatalf("iter %d: tail message %d changed", iter, i)
			}
		}
		for i := 1; i < len(out); i++ {
			if out[i].Role == out[i-1].Role && out[i].Role != "tool" && !(out[i].Role == "assistant" && len(out[i-1].ToolCalls) > 0) {
				t.Fatalf("iter %d: two %s messages adjacent at %d", iter, out[i].Role, i)
			}
			if out[i].Role == "tool" && out[i-1].Role != "tool" && len(out[i-1].ToolCalls) == 0 {
				t.Fatalf("iter %d: orphan tool result at %d", iter, i)
			}
		}
	}
}

func TestAssembleRoles(t *testing.T) {
	u := schema.Message{Role: "user", Content: "u"}
	a := schema.Message{Role: "assistant", Content: "a"}
	out := Assemble([]schema.Message{u, a}, "S", []schema.Message{u, a})
	if out[2].Role != "assistant" && out[2].Role != "user" || out[2].Role == out[1].Role || out[2].Role == out[3].Role {
		// user after assistant and before user is impossible: merged.
		if !strings.HasPrefix(out[2].Content, SummaryPrefix) {
			t.Fatalf("%+v", out)
		}
	}
	out = Assemble([]schema.Message{u}, "S", []schema.Message{a, u})
	if len(out) != 3 || !strings.HasPrefix(out[1].Content, SummaryPrefix) || out[1].Role != "assistant" {
		t.Fatalf("both neighbours collide: want merge into the tail, got %+v", out)
	}
	out = Assemble([]schema.Message{u, a}, "S", []schema.Message{a})
	if out[2].Role != "user" {
		t.Fatalf("want a user summary between assistants, got %+v", out)
	}
}

func TestPrune(t *testing.T) {
	out := Prune([]schema.Message{{Role: "tool", Name: "terminal", Content: strings.Repeat("x", 5000)}, {Role: "tool", Content: "short"}}, 1000)
	if out[0].Content != "[tool output pruned: terminal returned 5000 characters]" || out[1].Content != "short" {
		t.Fatalf("%+v", out)
	}
}

func TestCounter(t *testing.T) {
	real := NewCounter("openai/gpt-4o-mini")
	if !real.Exact() {
		t.Fatal("no real tokenizer for gpt-4o-mini")
	}
	msg := schema.Message{Role: "user", Content: "Hello, world! This is a test of the tokenizer."}
	if n := real.Message(msg); n < 10 || n > 20 {
		t.Fatalf("real count %d", n)
	}
	rough := NewCounter("claude-sonnet-4")
	if rough.Exact() || rough.Message(msg) != len(msg.Content)/4+4 {
		t.Fatalf("fallback count %d", rough.Message(msg))
	}
}
