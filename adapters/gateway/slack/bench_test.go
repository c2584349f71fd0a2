package slack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/gateway/slack"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/schema"
)

// benchChats is how many direct chats the benchmark's messages are spread
// over (turns of one chat run one after another, of different chats side
// by side).
const benchChats = 8

// BenchmarkThroughput is messages per second through the whole gateway
// with an instant scripted model: b.N direct messages over benchChats
// chats, all sent at once, timed until every answer was posted. chat is
// the baseline: gatewaytest's in-process Chat platform (no platform API
// at all); slack-socket-mode pushes Socket Mode envelopes over slacktest's
// WebSocket and counts the answers posted to slacktest's chat.postMessage;
// slack-events-api posts signed Events API requests to the adapter's
// endpoint, answers likewise posted to slacktest. All in the same run:
//
//	go test -run '^$' -bench Throughput -benchtime 300x ./adapters/gateway/slack/
func BenchmarkThroughput(b *testing.B) {
	b.Run("chat", benchChat)
	b.Run("slack-socket-mode", func(b *testing.B) { benchSlack(b, socketMode) })
	b.Run("slack-events-api", func(b *testing.B) { benchSlack(b, eventsAPI) })
}

func benchRig(b *testing.B) *gatewaytest.Rig {
	llm := llmtest.New()
	llm.Cycle = []llmtest.Reply{{Content: "pong", Prompt: 10, Completion: 1}}
	llm.NoRecord = true
	b.Cleanup(llm.Close)
	return gatewaytest.Start(b, gatewaytest.Options{LLM: llm,
		Config: gateway.Config{Auth: gateway.Auth{AllowAll: true}, TypingEvery: time.Hour}})
}

func benchChat(b *testing.B) {
	rig := benchRig(b)
	var replies atomic.Int64
	chat := gatewaytest.NewChat("bench")
	chat.OnSend = func(o schema.Outbound) {
		if o.Kind == "reply" {
			replies.Add(1)
		}
	}
	rig.Serve(chat, nil)
	run(b, &replies, func(i int) {
		chat.Post(b, gatewaytest.DM(fmt.Sprint("u", i%benchChats), fmt.Sprint(i), "ping"))
	})
}

func benchSlack(b *testing.B, m mode) {
	p := startPeer(b)
	rig := benchRig(b)
	cfg := slack.Config{BotToken: botToken, APIURL: p.url(), HTTPClient: p.client(), PingInterval: time.Hour, Log: zerolog.Nop()}
	if m == socketMode {
		cfg.AppToken = appToken
	} else {
		cfg.SigningSecret, cfg.EventsListen = secret, "127.0.0.1:0"
	}
	ad, err := slack.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	rig.Serve(ad, nil)
	gatewaytest.WaitFor(b, "the adapter to connect", ad.Connected)
	endpoint := ""
	if m == eventsAPI {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		endpoint = "http://" + ad.EventsAddr(ctx).String() + slack.EventsPath
		cancel()
	}
	var replies atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				replies.Store(int64(len(p.rec.posts())))
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	run(b, &replies, func(i int) {
		u := fmt.Sprintf("U%07d", i%benchChats)
		ev := messageEvent(u, "D"+u[1:], "im", "ping", p.ts(), "")
		if m == socketMode {
			p.envelope("events_api", ev)
			return
		}
		raw, _ := json.Marshal(ev)
		resp := signed(b, endpoint, "application/json", raw, secret, time.Now())
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("event: %d", resp.StatusCode)
		}
	})
}

// run sends b.N messages with send, from benchChats goroutines, and waits
// until replies reaches b.N; it reports msgs/s.
func run(b *testing.B, replies *atomic.Int64, send func(i int)) {
	// Warm up: connections, actors, the store's pages.
	base := replies.Load()
	for i := range benchChats {
		send(-1 - i)
	}
	waitCount(b, replies, base+benchChats)
	b.ResetTimer()
	base = replies.Load()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range benchChats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < b.N; i += benchChats {
				send(i)
			}
		}()
	}
	wg.Wait()
	waitCount(b, replies, base+int64(b.N))
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
}

func waitCount(b *testing.B, n *atomic.Int64, want int64) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for n.Load() < want {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d answers after 2 minutes", n.Load(), want)
		}
		time.Sleep(time.Millisecond)
	}
}
