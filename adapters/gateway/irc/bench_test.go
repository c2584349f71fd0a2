package irc_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/gateway/irc"
	"github.com/hermes-go/hermes/adapters/gateway/irc/irctest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/schema"
)

// BenchmarkIRCMessages is a message's round trip through the whole gateway
// and the IRC adapter — a user's PRIVMSG to a real ngIRCd, the adapter,
// the bus, the router, the turn with an instant scripted model, the
// outbox, the adapter, ngIRCd, the user — beside the same round trip
// through the in-process test platform (gatewaytest.Chat) on the same
// gateway, alternately, in the same run. Both chats keep one session, so
// their histories grow alike. The adapter's flood control is opened wide
// (at its default of 1 line a second it would be the whole measure).
//
// Metrics: irc-msgs/s and chat-msgs/s (one round trip after another),
// their p50 latencies in µs, and irc/chat, the ratio of the p50s.
func BenchmarkIRCMessages(b *testing.B) {
	srv := irctest.Start(b)
	llm := llmtest.New()
	llm.Cycle = []llmtest.Reply{{Content: "pong", Prompt: 10, Completion: 1}}
	llm.NoRecord = true
	b.Cleanup(llm.Close)
	rig := gatewaytest.Start(b, gatewaytest.Options{LLM: llm, Config: gateway.Config{TypingEvery: time.Hour,
		Auth: gateway.Auth{Platform: map[string][]string{irc.Name: {"alice"}, "bench": {"u"}}}}})
	ad, err := irc.New(irc.Config{Server: "127.0.0.1", Port: srv.Port, Nick: botNick, AllowedUsers: []string{"alice"},
		LinesPerSecond: 1e6, Burst: 1000, Log: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	rig.Serve(ad, nil)
	deadline := time.Now().Add(20 * time.Second)
	for !ad.Connected() {
		if time.Now().After(deadline) {
			b.Fatal("the adapter did not connect")
		}
		time.Sleep(10 * time.Millisecond)
	}
	alice := irctest.Dial(b, srv.Addr(), "alice")
	chat := gatewaytest.NewChat("bench")
	replies := make(chan schema.Outbound, 64)
	chat.OnSend = func(o schema.Outbound) {
		if o.Kind == "reply" {
			replies <- o
		}
	}
	rig.Serve(chat, nil)

	sent := 0
	viaIRC := func() time.Duration {
		t0 := time.Now()
		if err := alice.Say(botNick, "ping"); err != nil {
			b.Fatal(err)
		}
		sent++
		ls, err := alice.WaitMessages(botNick, "alice", sent, 20*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if ls[sent-1].Text != "pong" {
			b.Fatalf("irc reply %q", ls[sent-1].Text)
		}
		return time.Since(t0)
	}
	i := 0
	viaChat := func() time.Duration {
		i++
		t0 := time.Now()
		chat.Post(b, gatewaytest.DM("u", fmt.Sprint(i), "ping"))
		select {
		case r := <-replies:
			if r.Text != "pong" {
				b.Fatalf("chat reply %+v", r)
			}
		case <-time.After(20 * time.Second):
			b.Fatal("no chat reply in 20 s")
		}
		return time.Since(t0)
	}
	for range 20 { // warm up both paths
		viaIRC()
		viaChat()
	}
	var ircT, chatT []time.Duration
	for b.Loop() {
		ircT = append(ircT, viaIRC())
		chatT = append(chatT, viaChat())
	}
	sum := func(ds []time.Duration) time.Duration {
		var s time.Duration
		for _, d := range ds {
			s += d
		}
		return s
	}
	p50 := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	b.ReportMetric(float64(len(ircT))/sum(ircT).Seconds(), "irc-msgs/s")
	b.ReportMetric(float64(len(chatT))/sum(chatT).Seconds(), "chat-msgs/s")
	b.ReportMetric(float64(p50(ircT).Microseconds()), "irc-p50-µs")
	b.ReportMetric(float64(p50(chatT).Microseconds()), "chat-p50-µs")
	b.ReportMetric(float64(p50(ircT))/float64(p50(chatT)), "irc/chat-p50")
	b.ReportMetric(0, "ns/op")
}
