package irc_test

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
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
// gateway, alternately, in the same run. users-1 sends one message at a
// time; users-8 has 8 users (8 chats) each send one and wait for its
// answer, at once. Every chat keeps one session, so histories grow alike
// on both paths. The adapter's flood control is opened wide (at its
// default of 1 line a second it would be the whole measure).
//
// Metrics: irc-msgs/s and chat-msgs/s (answered messages per second of
// the time spent on each path), the p50 round trip in µs of each, and
// irc/chat, the ratio of the throughputs.
func BenchmarkIRCMessages(b *testing.B) {
	for _, users := range []int{1, 8} {
		b.Run(fmt.Sprintf("users-%d", users), func(b *testing.B) { benchMessages(b, users) })
	}
}

func benchMessages(b *testing.B, users int) {
	srv := irctest.Start(b)
	llm := llmtest.New()
	llm.Cycle = []llmtest.Reply{{Content: "pong", Prompt: 10, Completion: 1}}
	llm.NoRecord = true
	b.Cleanup(llm.Close)
	var err error
	var nicks, chatUsers []string
	for k := range users {
		nicks, chatUsers = append(nicks, fmt.Sprintf("alice%d", k)), append(chatUsers, fmt.Sprintf("u%d", k))
	}
	// HERMES_BENCH_DIR=/dev/shm keeps the store off the disk (its fsyncs
	// otherwise dominate both paths).
	dir := ""
	if d := os.Getenv("HERMES_BENCH_DIR"); d != "" {
		if dir, err = os.MkdirTemp(d, "hermes-bench-"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
	}
	rig := gatewaytest.Start(b, gatewaytest.Options{Dir: dir, LLM: llm, Config: gateway.Config{TypingEvery: time.Hour,
		Auth: gateway.Auth{Platform: map[string][]string{irc.Name: nicks, "bench": chatUsers}}}})
	ad, err := irc.New(irc.Config{Server: "127.0.0.1", Port: srv.Port, Nick: botNick, AllowedUsers: nicks,
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
	clients := make([]*irctest.Client, users)
	sent := make([]int, users)
	for k := range users {
		clients[k] = irctest.Dial(b, srv.Addr(), nicks[k])
	}
	chat := gatewaytest.NewChat("bench")
	replies := map[string]chan schema.Outbound{}
	for _, u := range chatUsers {
		replies["c"+u] = make(chan schema.Outbound, 16)
	}
	chat.OnSend = func(o schema.Outbound) {
		if o.Kind == "reply" {
			replies[o.Chat] <- o
		}
	}
	rig.Serve(chat, nil)
	posted := 0
	var postMu sync.Mutex

	viaIRC := func(k int) time.Duration {
		t0 := time.Now()
		if err := clients[k].Say(botNick, "ping"); err != nil {
			b.Error(err)
			return 0
		}
		sent[k]++
		ls, err := clients[k].WaitMessages(botNick, nicks[k], sent[k], 20*time.Second)
		if err != nil {
			b.Error(err)
			return 0
		}
		if ls[sent[k]-1].Text != "pong" {
			b.Errorf("irc reply %q", ls[sent[k]-1].Text)
		}
		return time.Since(t0)
	}
	viaChat := func(k int) time.Duration {
		postMu.Lock()
		posted++
		id := fmt.Sprint(posted)
		postMu.Unlock()
		t0 := time.Now()
		chat.Post(b, gatewaytest.DM(chatUsers[k], id, "ping"))
		select {
		case r := <-replies["c"+chatUsers[k]]:
			if r.Text != "pong" {
				b.Errorf("chat reply %+v", r)
			}
		case <-time.After(20 * time.Second):
			b.Error("no chat reply in 20 s")
		}
		return time.Since(t0)
	}
	// round runs one message per user at once on a path and returns the
	// wall time and each round trip.
	round := func(path func(int) time.Duration) (time.Duration, []time.Duration) {
		t0 := time.Now()
		rtts := make([]time.Duration, users)
		var wg sync.WaitGroup
		for k := range users {
			wg.Go(func() { rtts[k] = path(k) })
		}
		wg.Wait()
		return time.Since(t0), rtts
	}
	for range 10 { // warm up both paths
		round(viaIRC)
		round(viaChat)
	}
	var ircWall, chatWall time.Duration
	var ircRTT, chatRTT []time.Duration
	for b.Loop() {
		w, r := round(viaIRC)
		ircWall, ircRTT = ircWall+w, append(ircRTT, r...)
		w, r = round(viaChat)
		chatWall, chatRTT = chatWall+w, append(chatRTT, r...)
		if b.Failed() {
			b.FailNow()
		}
	}
	p50 := func(ds []time.Duration) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(s[len(s)/2].Microseconds())
	}
	ircRate := float64(len(ircRTT)) / ircWall.Seconds()
	chatRate := float64(len(chatRTT)) / chatWall.Seconds()
	b.ReportMetric(ircRate, "irc-msgs/s")
	b.ReportMetric(chatRate, "chat-msgs/s")
	b.ReportMetric(p50(ircRTT), "irc-p50-µs")
	b.ReportMetric(p50(chatRTT), "chat-p50-µs")
	b.ReportMetric(ircRate/chatRate, "irc/chat")
	b.ReportMetric(0, "ns/op")
}
