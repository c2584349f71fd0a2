package email_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/schema"
)

// BenchmarkThroughput is messages/s through the whole gateway with an
// instant model: b.N mails, each starting a thread of its own, waiting in
// the bot's Dovecot mailbox, read over IMAP, answered over SMTP to maildev
// (email-msgs/s, until maildev holds every answer); beside it, in the same
// run, the same b.N messages through gatewaytest's in-process Chat
// platform (chat-msgs/s), and the ratio of the two.
//
//	HERMES_NODE_MODULES=$PWD/.ci/node/node_modules go test -run '^$' -bench Throughput -benchtime 200x ./adapters/gateway/email/
func BenchmarkThroughput(b *testing.B) {
	n := b.N
	model := func() *llmtest.Server {
		llm := llmtest.New()
		llm.Cycle = []llmtest.Reply{{Content: "pong"}}
		llm.NoRecord = true
		b.Cleanup(llm.Close)
		return llm
	}
	cfg := gateway.Config{Auth: gateway.Auth{AllowAll: true}, TypingEvery: time.Hour}

	// The baseline: the in-process test platform.
	rig := gatewaytest.Start(b, gatewaytest.Options{LLM: model(), Config: cfg})
	replies := make(chan struct{}, n)
	chat := gatewaytest.NewChat("bench")
	chat.OnSend = func(o schema.Outbound) {
		if o.Kind == "reply" {
			replies <- struct{}{}
		}
	}
	rig.Serve(chat, nil)
	start := time.Now()
	for i := range n {
		chat.Post(b, gatewaytest.DM(strconv.Itoa(i), "m"+strconv.Itoa(i), "ping"))
	}
	for range n {
		<-replies
	}
	chatRate := float64(n) / time.Since(start).Seconds()
	rig.Stop()

	// The email adapter against the real servers.
	s := startServers(b, false)
	for i := range n {
		s.dv.Deliver(b, alice, []string{bot}, mailFrom(alice, "ping", fmt.Sprintf("<bench%d@example.test>", i), "ping"))
	}
	rig = gatewaytest.Start(b, gatewaytest.Options{LLM: model(), Config: cfg})
	b.ResetTimer()
	start = time.Now()
	serve(b, rig, s.config(b.TempDir()))
	deadline := time.Now().Add(time.Duration(n)*time.Second + time.Minute)
	for {
		got, err := s.md.Count(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if got >= n {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d answers", got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	emailRate := float64(n) / time.Since(start).Seconds()
	b.StopTimer()
	b.ReportMetric(emailRate, "email-msgs/s")
	b.ReportMetric(chatRate, "chat-msgs/s")
	b.ReportMetric(emailRate/chatRate, "email/chat")
	b.ReportMetric(0, "ns/op")
}
