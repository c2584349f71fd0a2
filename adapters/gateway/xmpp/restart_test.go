package xmpp_test

import (
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/gateway/xmpp"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// An answer finished while the server is down, with the gateway restarted
// before the server is back, is delivered once the server is: exactly once
// (issue 25 saw it twice).
func TestAnswerFromBeforeAGatewayRestartIsSentOnce(t *testing.T) {
	w := newWorld(t)
	dir := t.TempDir()
	cfg := gateway.Config{TypingEvery: time.Hour, Auth: gateway.Auth{Platform: map[string][]string{"xmpp": {"alice@localhost"}}}}
	start := func(script ...llmtest.Reply) (*gatewaytest.Rig, *watched) {
		t.Helper()
		rig := gatewaytest.Start(t, gatewaytest.Options{Dir: dir, Script: script, Config: cfg})
		ad, err := xmpp.New(xmpp.Config{JID: botJID, Password: "bot-secret", Server: w.srv.Addr, TLS: w.srv.TLS(), MaxBackoff: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		wa := &watched{Adapter: ad}
		rig.Serve(wa, nil)
		return rig, wa
	}
	rig, ad := start(llmtest.Reply{Content: "answer written during the outage", Delay: 1500 * time.Millisecond})
	gatewaytest.WaitFor(t, "the adapter to connect", ad.Connected)
	w.alice.Say(botJID, "a slow question")
	gatewaytest.WaitFor(t, "the model call", func() bool { return len(rig.LLM.Requests()) == 1 })
	w.srv.Stop()
	gatewaytest.WaitFor(t, "a delivery attempt to fail", func() bool { return ad.failed.Load() > 0 })
	rig.Stop()

	rig, ad = start()
	if n := gatewaytest.CountTypes(t, rig.Store, "GatewayMessageDelivered"); n != 0 {
		t.Fatalf("%d deliveries recorded while the server was down", n)
	}
	gatewaytest.WaitFor(t, "the restarted gateway's delivery attempt to fail", func() bool { return ad.failed.Load() > 0 })
	w.srv.Up()
	gatewaytest.WaitFor(t, "the adapter to reconnect", ad.Connected)
	alice := w.srv.Connect("alice", "alice-pass")
	if got := alice.Wait(botJID, 1); got[0].Body != "answer written during the outage" {
		t.Fatalf("after the restarts: %+v", got)
	}
	gatewaytest.WaitFor(t, "the reply recorded as delivered", func() bool {
		return gatewaytest.CountTypes(t, rig.Store, "GatewayMessageDelivered") == 1
	})
	time.Sleep(2 * time.Second)
	if got := alice.Messages(botJID); len(got) != 1 {
		t.Fatalf("%d answers, want 1: %+v", len(got), got)
	}
}
