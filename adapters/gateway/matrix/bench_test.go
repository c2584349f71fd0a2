package matrix_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/gateway"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/gateway/matrix"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/schema"
)

// signalling passes a platform's sends through and reports each reply
// sent.
type signalling struct {
	gw.Platform
	sent chan struct{}
}

func (s signalling) Send(ctx context.Context, out schema.Outbound) ([]string, error) {
	ids, err := s.Platform.Send(ctx, out)
	if err == nil && out.Kind == "reply" {
		s.sent <- struct{}{}
	}
	return ids, err
}

// BenchmarkMessages is messages per second through the whole gateway with
// an instant model, one message at a time in one direct chat: matrix is a
// person's message sent to Dendrite, received by the adapter's /sync,
// answered, and the answer sent to Dendrite; chat is the same gateway with
// the in-process test platform (gatewaytest.Chat), measured in the same
// run as the baseline. The ratio is chat's rate over matrix's.
func BenchmarkMessages(b *testing.B) {
	llm := llmtest.New()
	llm.Cycle = []llmtest.Reply{{Content: "pong", Prompt: 10, Completion: 1}}
	llm.NoRecord = true
	b.Cleanup(llm.Close)
	var chatRate, matrixRate float64

	b.Run("chat", func(b *testing.B) {
		rig := gatewaytest.Start(b, gatewaytest.Options{LLM: llm, Config: gateway.Config{Auth: gateway.Auth{AllowAll: true}, TypingEvery: time.Hour}})
		sent := make(chan struct{}, 1)
		chat := gatewaytest.NewChat("bench")
		chat.OnSend = func(o schema.Outbound) {
			if o.Kind == "reply" {
				sent <- struct{}{}
			}
		}
		rig.Serve(chat, nil)
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			chat.Post(b, gatewaytest.DM("alice", fmt.Sprintf("m%d", i), "ping"))
			<-sent
		}
		chatRate = float64(b.N) / time.Since(start).Seconds()
		b.ReportMetric(chatRate, "msgs/s")
	})

	b.Run("matrix", func(b *testing.B) {
		srv := newWorld(b)
		rig := gatewaytest.Start(b, gatewaytest.Options{LLM: llm, Config: gateway.Config{Auth: gateway.Auth{AllowAll: true}, TypingEvery: time.Hour}})
		dm := srv.alice.DM(b, srv.bot.ID)
		srv.bot.Join(b, dm)
		ad, err := matrix.New(matrix.Config{Homeserver: srv.srv.URL, UserID: string(srv.bot.ID), AccessToken: srv.bot.Token, SyncTimeout: 5 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		sent := make(chan struct{}, 1)
		rig.Serve(signalling{Platform: ad, sent: sent}, nil)
		select {
		case <-ad.Ready():
		case <-time.After(30 * time.Second):
			b.Fatal("no first sync in 30 s")
		}
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			srv.alice.Text(b, dm, "ping")
			select {
			case <-sent:
			case <-time.After(30 * time.Second):
				b.Fatalf("no answer to message %d in 30 s", i)
			}
		}
		matrixRate = float64(b.N) / time.Since(start).Seconds()
		b.ReportMetric(matrixRate, "msgs/s")
		if chatRate > 0 {
			b.ReportMetric(chatRate/matrixRate, "x-slower-than-chat")
		}
	})
}
