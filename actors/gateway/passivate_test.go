package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
)

// A chat whose session passivated between two messages goes on in it: the
// chat actor holds only the session's id, and the next turn wakes the
// session from its events, so the model sees the first exchange.
func TestChatGoesOnAfterItsSessionPassivated(t *testing.T) {
	llm := llmtest.New(llmtest.Reply{Content: "first answer"}, llmtest.Reply{Content: "second answer"})
	t.Cleanup(llm.Close)
	// The router runs on a manager whose sessions idle out fast, made
	// on first use (the rig's store exists by then).
	var rig *gatewaytest.Rig
	var once sync.Once
	var mgr *session.Manager
	idling := &lazySessions{get: func() *session.Manager {
		once.Do(func() {
			mgr = session.NewManager(rig.Sys, session.Deps{Store: rig.Store, Log: zerolog.Nop(),
				Provider: openai.NewChat(openai.Options{BaseURL: llm.URL + "/v1"}), Tools: tool.NewTools(),
				Exec: tool.DirectExecutor{Timeout: 10 * time.Second}, Cfg: agent.Config{Model: "gpt-4o-mini"}, MaxTurns: 10,
				IdleAfter: 50 * time.Millisecond})
			t.Cleanup(mgr.Shutdown)
		})
		return mgr
	}}
	rig = gatewaytest.Start(t, gatewaytest.Options{Config: gateway.Config{Auth: gateway.Auth{AllowAll: true}}, LLM: llm,
		WrapSessions: func(gateway.Sessions) gateway.Sessions { return idling }})

	chat := gatewaytest.NewChat("testchat")
	rig.Serve(chat, nil)
	chat.Post(t, gatewaytest.DM("7", "1", "my name is Ada"))
	if got := chat.WaitReplies(t, 1); got[0].Text != "first answer" {
		t.Fatalf("reply %+v", got[0])
	}
	gatewaytest.WaitFor(t, "the session to passivate", func() bool { return idling.get().Active() == 0 })
	chat.Post(t, gatewaytest.DM("7", "2", "what is my name?"))
	if got := chat.WaitReplies(t, 2); got[1].Text != "second answer" {
		t.Fatalf("reply %+v", got[1])
	}
	reqs := llm.Requests()
	body, _ := json.Marshal(reqs[len(reqs)-1].Body["messages"])
	for _, want := range []string{"my name is Ada", "first answer", "what is my name?"} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("the woken session's request lacks %q: %s", want, body)
		}
	}
}

// lazySessions is a session manager made on first use.
type lazySessions struct{ get func() *session.Manager }

func (l *lazySessions) RunTurn(ctx context.Context, id string, t *session.Turn) session.TurnResult {
	return l.get().RunTurn(ctx, id, t)
}
func (l *lazySessions) Stop(id, reason string) { l.get().Stop(id, reason) }
func (l *lazySessions) Compress(ctx context.Context, id, model string) (string, error) {
	return l.get().Compress(ctx, id, model)
}
