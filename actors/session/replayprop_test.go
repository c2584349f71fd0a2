package session_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/replay"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
)

// randomScript is a random session: turns of tool calls (parallel, with
// unknown tools and bad JSON now and then), answers cut by the output
// limit (continued, some still cut after every continuation), cut tool
// calls asked again, reasoning, answers with no usage reported (estimated)
// and turns that run out of their budget.
func randomScript(rng *rand.Rand, turns int) []llmtest.Reply {
	var s []llmtest.Reply
	call := 0
	usage := func(r llmtest.Reply) llmtest.Reply {
		if rng.IntN(3) > 0 {
			r.Prompt, r.Completion = int64(100+rng.IntN(900)), int64(1+rng.IntN(50))
		}
		return r
	}
	for range turns {
		for range rng.IntN(4) {
			switch rng.IntN(5) {
			case 0, 1: // tool calls
				var tcs []llmtest.ToolCall
				for range 1 + rng.IntN(3) {
					call++
					tc := llmtest.ToolCall{ID: fmt.Sprintf("c%d", call), Name: "echo", Args: fmt.Sprintf(`{"x":%d}`, rng.IntN(100))}
					switch rng.IntN(8) {
					case 0:
						tc.Name = "nosuchtool"
					case 1:
						tc.Args = `{"x": }`
					}
					tcs = append(tcs, tc)
				}
				s = append(s, usage(llmtest.Reply{ToolCalls: tcs, Reasoning: strings.Repeat("think ", rng.IntN(2))}))
			case 2: // a cut tool call, asked again
				call++
				s = append(s, llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: fmt.Sprintf("c%d", call), Name: "echo", Args: `{"x":`}}, Finish: "length"})
				call++
				s = append(s, usage(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: fmt.Sprintf("c%d", call), Name: "echo", Args: `{"x":7}`}}}))
			case 3: // continuations of a long answer that still needs tools after
				for k := range 1 + rng.IntN(2) {
					s = append(s, usage(llmtest.Reply{Content: fmt.Sprintf("part %d, ", k), Finish: "length"}))
				}
				call++
				s = append(s, usage(llmtest.Reply{Content: "then a tool. ", ToolCalls: []llmtest.ToolCall{{ID: fmt.Sprintf("c%d", call), Name: "echo", Args: `{}`}}}))
			case 4: // reasoning between calls
				call++
				s = append(s, usage(llmtest.Reply{Reasoning: "let me check", ToolCalls: []llmtest.ToolCall{{ID: fmt.Sprintf("c%d", call), Name: "echo", Args: `{"y":1}`}}}))
			}
		}
		switch rng.IntN(4) {
		case 0: // an answer cut after every continuation (1 + 3 calls)
			for k := range 4 {
				s = append(s, usage(llmtest.Reply{Content: fmt.Sprintf("long %d ", k), Finish: "length"}))
			}
		case 1: // an answer with a continuation
			s = append(s, usage(llmtest.Reply{Content: "The answer is ", Finish: "length"}), usage(llmtest.Reply{Content: "42."}))
		default:
			s = append(s, usage(llmtest.Reply{Content: fmt.Sprintf("done %d", rng.IntN(1000))}))
		}
	}
	return s
}

// Every session the loop can record replays without divergence.
func TestRandomSessionsReplay(t *testing.T) {
	n := 40
	if testing.Short() {
		n = 10
	}
	for seed := range n {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		turns := 1 + rng.IntN(3)
		script := randomScript(rng, turns)
		r := newRig(t, script...)
		id := fmt.Sprintf("prop-%d", seed)
		r.create(t, id)
		ctx := context.Background()
		for k := range turns {
			if res := r.mgr.Run(ctx, id, fmt.Sprintf("task %d", k), nil); res.Err != nil {
				t.Fatalf("seed %d turn %d: %v", seed, k, res.Err)
			}
		}
		if left := r.srv.Remaining(); left != 0 {
			// a turn ended early (budget): the rest of the script was not
			// used, which is fine, but the turns must all have run
			t.Logf("seed %d: %d scripted replies unused", seed, left)
		}
		rs, err := r.store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := replay.Run(ctx, rs, nil)
		if err != nil {
			t.Fatalf("seed %d (%d turns, %d replies): %v", seed, turns, len(script), err)
		}
		if rep.Turns != turns || rep.Calls != len(script)-r.srv.Remaining() {
			t.Fatalf("seed %d: replayed %d turns and %d calls, recorded %d turns and %d calls", seed, rep.Turns, rep.Calls, turns, len(script)-r.srv.Remaining())
		}
	}
}
