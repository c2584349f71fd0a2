package xmpp_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/gateway/xmpp"
	"github.com/hermes-go/hermes/adapters/gateway/xmpp/xmpptest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/schema"
)

// BenchmarkXMPPMessages is messages answered per second through the XMPP
// adapter and a real Prosody — a person's client sends, the adapter hands
// the message to the gateway, the turn runs against an instant scripted
// model, the answer goes back through Prosody to the person — beside the
// same gateway with gatewaytest's in-process Chat platform (no network,
// no XMPP), in the same run. sequential: one user, one message at a time
// (a round trip each); burst: 8 users send at once and all 8 answers are
// awaited. Metric: msgs/s.
func BenchmarkXMPPMessages(b *testing.B) {
	const users = 8
	for _, mode := range []string{"sequential", "burst"} {
		n := 1
		if mode == "burst" {
			n = users
		}
		b.Run("xmpp/"+mode, func(b *testing.B) { benchXMPP(b, n) })
		b.Run("chat-baseline/"+mode, func(b *testing.B) { benchChat(b, n) })
	}
}

func instantLLM(b *testing.B) *llmtest.Server {
	llm := llmtest.New()
	llm.Cycle = []llmtest.Reply{{Content: "pong", Prompt: 10, Completion: 1}}
	llm.NoRecord = true
	b.Cleanup(llm.Close)
	return llm
}

func benchXMPP(b *testing.B, n int) {
	xmpptest.Require(b)
	srv := xmpptest.Start(b)
	srv.Register("hermes", "bot-secret")
	rig := gatewaytest.Start(b, gatewaytest.Options{LLM: instantLLM(b),
		Config: gateway.Config{TypingEvery: time.Hour, Auth: gateway.Auth{AllowAll: true}}})
	ad, err := xmpp.New(xmpp.Config{JID: botJID, Password: "bot-secret", Server: srv.Addr, TLS: srv.TLS()})
	if err != nil {
		b.Fatal(err)
	}
	rig.Serve(ad, nil)
	gatewaytest.WaitFor(b, "the adapter to connect", ad.Connected)
	clients := make([]*xmpptest.Client, n)
	subs := make([]<-chan xmpptest.Message, n)
	for i := range clients {
		user := fmt.Sprint("user", i)
		srv.Register(user, "pass")
		clients[i] = srv.Connect(user, "pass")
		subs[i] = clients[i].Subscribe()
	}
	round := func() {
		for _, c := range clients {
			if err := c.Send(botJID, "chat", "ping"); err != nil {
				b.Fatal(err)
			}
		}
		for i, ch := range subs {
			select {
			case m := <-ch:
				if m.Body != "pong" {
					b.Fatalf("user %d got %q", i, m.Body)
				}
			case <-time.After(20 * time.Second):
				b.Fatalf("user %d: no answer in 20 s", i)
			}
		}
	}
	for range 10 {
		round() // warm up: sessions, connections, store pages
	}
	start := time.Now()
	rounds := 0
	for b.Loop() {
		round()
		rounds++
	}
	b.ReportMetric(float64(rounds*n)/time.Since(start).Seconds(), "msgs/s")
}

func benchChat(b *testing.B, n int) {
	rig := gatewaytest.Start(b, gatewaytest.Options{LLM: instantLLM(b),
		Config: gateway.Config{TypingEvery: time.Hour, Auth: gateway.Auth{AllowAll: true}}})
	replies := make(chan schema.Outbound, 1024)
	chat := gatewaytest.NewChat("bench")
	chat.OnSend = func(o schema.Outbound) {
		if o.Kind == "reply" {
			replies <- o
		}
	}
	rig.Serve(chat, nil)
	id := 0
	round := func() {
		for u := range n {
			id++
			chat.Post(b, gatewaytest.DM(fmt.Sprint("user", u), fmt.Sprint(id), "ping"))
		}
		for range n {
			select {
			case r := <-replies:
				if r.Text != "pong" {
					b.Fatalf("reply %q", r.Text)
				}
			case <-time.After(20 * time.Second):
				b.Fatal("no reply in 20 s")
			}
		}
	}
	for range 10 {
		round()
	}
	start := time.Now()
	rounds := 0
	for b.Loop() {
		round()
		rounds++
	}
	b.ReportMetric(float64(rounds*n)/time.Since(start).Seconds(), "msgs/s")
}
