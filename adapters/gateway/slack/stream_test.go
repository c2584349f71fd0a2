package slack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack/slacktest"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/gateway/slack"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// updates serves chat.update on slacktest, which has no handler for it:
// a stand-in answering in the Web API's documented format, keeping each
// update.
type updates struct {
	mu sync.Mutex
	us []update
}

type update struct{ Channel, TS, Text string }

func (u *updates) bind(c slacktest.Customize) {
	c.Handle("/chat.update", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		up := update{Channel: r.FormValue("channel"), TS: r.FormValue("ts"), Text: r.FormValue("text")}
		u.mu.Lock()
		u.us = append(u.us, up)
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": up.Channel, "ts": up.TS, "text": up.Text})
	})
}

func (u *updates) all() []update {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]update(nil), u.us...)
}

// reads is what the posts to ch read now: each post's text, updated.
func reads(p *peer, u *updates, ch string) []string {
	var out []string
	for _, ps := range p.rec.to(ch) {
		text := ps.Text
		for _, up := range u.all() {
			if up.Channel == ch && up.TS == ps.TS {
				text = up.Text
			}
		}
		out = append(out, text)
	}
	return out
}

type slackTerminal struct{}

func (slackTerminal) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "terminal", Description: "runs a command", Parameters: map[string]any{"type": "object"}}
}
func (slackTerminal) Flags() tool.Flags                                    { return tool.Flags{} }
func (slackTerminal) Run(context.Context, json.RawMessage) (string, error) { return "ok", nil }

// In a Slack DM a turn's tool call becomes a progress line and its answer,
// written slowly, a message posted once and updated (chat.update) as it
// grows, paced, to read the whole answer at the end.
func TestSocketModeStreamsAndShowsProgress(t *testing.T) {
	u := &updates{}
	p := startPeer(t, u.bind)
	p.rec.uniqueTS.Store(true)
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&b, "Line %d of an answer written slowly.\n", i)
	}
	answer := strings.TrimSpace(b.String())
	cfg := gateway.Config{Auth: gateway.Auth{Platform: map[string][]string{"slack": {alice}}}, TypingEvery: time.Hour,
		Display: func(string) gateway.Display {
			return gateway.Display{Streaming: true, ToolProgress: gateway.ProgressAll}
		}}
	const every = 200 * time.Millisecond
	rig := gatewaytest.Start(t, gatewaytest.Options{Config: cfg, EditEvery: every, Tools: []tool.Tool{slackTerminal{}}, Script: []llmtest.Reply{
		{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "terminal", Args: `{"command":"ls -la"}`}}},
		{Content: answer, Pieces: 20, PieceEvery: 60 * time.Millisecond},
	}})
	ad, err := slack.New(slack.Config{BotToken: botToken, AppToken: appToken, APIURL: p.url(), HTTPClient: p.client(), PingInterval: time.Hour, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	rig.Serve(ad, nil)
	gatewaytest.WaitFor(t, "the adapter to connect", ad.Connected)
	start := time.Now()
	p.envelope("events_api", messageEvent(alice, dm, "im", "list and explain", p.ts(), ""))
	gatewaytest.WaitFor(t, "the answer delivered", func() bool { return gatewaytest.CountTypes(t, rig.Store, "GatewayMessageDelivered") == 1 })
	elapsed := time.Since(start)
	got := reads(p, u, dm)
	want := []string{slack.Mrkdwn(`💻 terminal: "ls -la"`), slack.Mrkdwn(answer)}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("the DM reads\n%q\nwant\n%q", got, want)
	}
	n := 0
	for _, up := range u.all() {
		if up.Channel == dm && up.TS == p.rec.to(dm)[1].TS {
			n++
		}
	}
	t.Logf("20 pieces in %s: the answer posted once and updated %d times (EditEvery %s)", elapsed, n, every)
	if n < 2 || n >= 20 || n > int(elapsed/every)+2 {
		t.Fatalf("the answer was updated %d times in %s: want streamed (2 or more) and paced (at most %d)", n, elapsed, int(elapsed/every)+2)
	}
}
