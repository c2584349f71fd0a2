package gateway_test

import (
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/adapters/bus/bustest"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// The gateway over NATS JetStream (a real nats-server), the platform and
// the router on connections of their own as two processes would be: the
// answer is delivered and acknowledged, and a platform message delivered
// twice starts one turn.
func TestGatewayOverNATS(t *testing.T) {
	srv := bustest.StartNATS(t)
	rig := gatewaytest.Start(t, gatewaytest.Options{BusURL: srv.URL,
		Config: gateway.Config{Auth: gateway.Auth{Platform: map[string][]string{"testchat": {"111"}}}},
		Script: []llmtest.Reply{{Content: "Paris."}}})
	chat := gatewaytest.NewChat("testchat")
	rig.Serve(chat, rig.OpenBus())

	chat.Post(t, gatewaytest.DM("111", "1", "capital of France?"))
	got := chat.WaitReplies(t, 1)
	if got[0].Text != "Paris." || got[0].InReplyTo != "1" || got[0].Chat != "c111" {
		t.Fatalf("reply %+v", got[0])
	}
	chat.Post(t, gatewaytest.DM("111", "1", "capital of France?"))
	gatewaytest.WaitFor(t, "the delivery acknowledged", func() bool {
		return gatewaytest.CountTypes(t, rig.Store, "GatewayMessageDelivered") == 1
	})
	time.Sleep(500 * time.Millisecond)
	if n := len(chat.Replies()); n != 1 {
		t.Fatalf("a redelivered message was answered again: %d replies", n)
	}
	if n := len(rig.LLM.Requests()); n != 1 {
		t.Fatalf("model called %d times", n)
	}
	if n := gatewaytest.CountTypes(t, rig.Store, "GatewayMessageReceived"); n != 1 {
		t.Fatalf("%d messages recorded", n)
	}
}

// A message published while the router is down waits on the bus and is
// answered once a router subscribes again; what was handled before is not
// handed over a second time.
func TestGatewayOverNATSRouterDown(t *testing.T) {
	srv := bustest.StartNATS(t)
	rig := gatewaytest.Start(t, gatewaytest.Options{BusURL: srv.URL, Config: gateway.Config{Auth: gateway.Auth{AllowAll: true}},
		Script: []llmtest.Reply{{Content: "first answer"}, {Content: "second answer"}}})
	chat := gatewaytest.NewChat("testchat")
	rig.Serve(chat, rig.OpenBus())

	chat.Post(t, gatewaytest.DM("5", "1", "one"))
	chat.WaitReplies(t, 1)
	gatewaytest.WaitFor(t, "the first delivery acknowledged", func() bool {
		return gatewaytest.CountTypes(t, rig.Store, "GatewayMessageDelivered") == 1
	})

	rig.StopRouter()
	chat.Post(t, gatewaytest.DM("5", "2", "two")) // stored by JetStream
	time.Sleep(300 * time.Millisecond)
	if n := gatewaytest.CountTypes(t, rig.Store, "GatewayMessageReceived"); n != 1 {
		t.Fatalf("%d messages recorded with the router down", n)
	}

	rig.StartRouter()
	got := chat.WaitReplies(t, 2)
	if got[1].Text != "second answer" || got[1].InReplyTo != "2" {
		t.Fatalf("after the restart: %+v", got[1])
	}
	gatewaytest.WaitFor(t, "both deliveries acknowledged", func() bool {
		return gatewaytest.CountTypes(t, rig.Store, "GatewayMessageDelivered") == 2
	})
	time.Sleep(500 * time.Millisecond)
	if n := len(chat.Replies()); n != 2 {
		t.Fatalf("%d replies, want 2: %+v", n, chat.Replies())
	}
	if n := len(rig.LLM.Requests()); n != 2 {
		t.Fatalf("model called %d times, want 2", n)
	}
}
