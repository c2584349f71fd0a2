package gateway_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// A new chat's opening events are written with its first message; when
// that fails half-way (no session could be created) the bus's retry opens
// nothing twice, and the chat's stream reads as if it had worked at once.
func TestNewChatOpensOnceWhenItsFirstMessageIsRetried(t *testing.T) {
	var calls atomic.Int32
	var store events.Store
	cfg := gateway.Config{Auth: gateway.Auth{AllowAll: true},
		NewSession: func(ctx context.Context, platform string) (string, error) {
			if calls.Add(1) == 1 {
				return "", errors.New("the store is busy")
			}
			id := uuid.NewString()
			return id, session.Create(ctx, store, id, session.Start{Source: platform, Model: "gpt-4o-mini"})
		}}
	rig := gatewaytest.Start(t, gatewaytest.Options{Config: cfg, Script: []llmtest.Reply{{Content: "hello"}}})
	store = rig.Store
	chat := gatewaytest.NewChat("testchat")
	rig.Serve(chat, nil)
	chat.Post(t, gatewaytest.DM("7", "1", "hi"))
	if got := chat.WaitReplies(t, 1); got[0].Text != "hello" {
		t.Fatalf("reply %+v", got[0])
	}
	key := gateway.ChatKey(schema.Inbound{Platform: "testchat", Chat: "c7", ChatType: "dm"}, false)
	rs, err := rig.Store.ReadStream(context.Background(), gateway.ChatStream(key), events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, r := range rs {
		types = append(types, r.Type)
	}
	want := []string{"GatewayChatOpened", "GatewaySessionBound", "GatewayMessageReceived", "GatewayReplyRequested"}
	if len(types) < len(want) {
		t.Fatalf("chat stream %v", types)
	}
	for i, w := range want {
		if types[i] != w {
			t.Fatalf("chat stream %v, want it to start with %v", types, want)
		}
	}
	if rs[0].Position+1 != rs[1].Position || rs[1].Position+1 != rs[2].Position {
		t.Fatalf("the opening events are not one write: positions %d %d %d", rs[0].Position, rs[1].Position, rs[2].Position)
	}
	if calls.Load() != 2 {
		t.Fatalf("NewSession called %d times", calls.Load())
	}
}
