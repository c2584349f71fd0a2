package matrix_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/gateway/matrix"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

type searchTool struct{}

func (searchTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "web_search", Description: "searches", Parameters: map[string]any{"type": "object"}}
}
func (searchTool) Flags() tool.Flags                                    { return tool.Flags{} }
func (searchTool) Run(context.Context, json.RawMessage) (string, error) { return "results", nil }

// In a Matrix DM a turn's tool calls become one progress notice (mode new:
// a line when the tool changes), and its answer, written slowly, a message
// sent once and edited (m.replace), paced, to read the whole answer.
func TestStreamsByEditingWithProgress(t *testing.T) {
	w := newWorld(t)
	ad := w.adapter(t, nil)
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&b, "Line %d of an answer written slowly.\n", i)
	}
	answer := strings.TrimSpace(b.String())
	const every = 200 * time.Millisecond
	cfg := gateway.Config{Auth: gateway.Auth{Platform: map[string][]string{matrix.Platform: {string(w.alice.ID)}}}, TypingEvery: time.Hour,
		Display: func(string) gateway.Display {
			return gateway.Display{Streaming: true, ToolProgress: gateway.ProgressNew}
		}}
	rig := gatewaytest.Start(t, gatewaytest.Options{Config: cfg, EditEvery: every, Tools: []tool.Tool{searchTool{}}, Script: []llmtest.Reply{
		{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "web_search", Args: `{"query":"matrix edits"}`}}},
		{ToolCalls: []llmtest.ToolCall{{ID: "c2", Name: "web_search", Args: `{"query":"m.replace"}`}}},
		{Content: answer, Pieces: 20, PieceEvery: 60 * time.Millisecond},
	}})
	served := rig.Serve(ad, nil)
	select {
	case <-ad.Ready():
	case <-time.After(30 * time.Second):
		t.Fatalf("the adapter did not sync in 30 s: %s", served.Status().LastError)
	}
	dm := w.alice.DM(t, w.bot.ID)
	w.alice.WaitJoined(t, dm, w.bot.ID)
	start := time.Now()
	q := w.alice.Text(t, dm, "search and explain")
	gatewaytest.WaitFor(t, "the answer delivered", func() bool { return gatewaytest.CountTypes(t, rig.Store, "GatewayMessageDelivered") == 1 })
	elapsed := time.Since(start)
	shown, err := w.alice.Shown(context.Background(), dm, w.bot.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(shown) != 2 {
		t.Fatalf("%d messages shown, want the progress notice and the answer: %+v", len(shown), shown)
	}
	progress, ans := shown[0], shown[1]
	if progress.Content.MsgType != event.MsgNotice || progress.Content.Body != `🔍 web_search: "matrix edits"` {
		t.Errorf("progress %s %q", progress.Content.MsgType, progress.Content.Body)
	}
	if ans.Content.MsgType != event.MsgText || ans.Content.Body != answer {
		t.Errorf("the answer reads %q", ans.Content.Body)
	}
	evs, err := w.alice.From(context.Background(), dm, w.bot.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.ID == ans.ID && ev.Content.AsMessage().RelatesTo.GetReplyTo() != q {
			t.Errorf("the streamed message does not reply to the question")
		}
	}
	t.Logf("20 pieces in %s: the answer sent once and edited %d times (EditEvery %s)", elapsed, ans.Edits, every)
	if ans.Edits < 2 || ans.Edits >= 20 || ans.Edits > int(elapsed/every)+2 {
		t.Fatalf("the answer was edited %d times in %s: want streamed (2 or more) and paced (at most %d)", ans.Edits, elapsed, int(elapsed/every)+2)
	}
}
