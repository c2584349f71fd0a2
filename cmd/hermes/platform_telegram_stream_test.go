package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/gateway/telegram/telegramtest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// With streaming: on in config.yaml the real binary streams an answer into
// one Telegram message; killed (-9) mid-stream and started again, it
// finishes the turn and edits that message into the answer: one message,
// the whole answer, delivered once.
func TestTelegramGatewayStreamsAndSurvivesKillMidStream(t *testing.T) {
	emu := telegramtest.Start(t)
	var long strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&long, "Line %d of a long answer.\n", i)
	}
	srv := llmtest.New(
		llmtest.Reply{Content: long.String(), Pieces: 40, PieceEvery: 250 * time.Millisecond},
		llmtest.Reply{Content: "The whole answer, after the restart."})
	defer srv.Close()
	home := t.TempDir()
	cfg := "streaming:\n  enabled: true\n  edit_interval: 0.2\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := telegramEnv(emu, srv)
	alice := telegramtest.User{ID: 111, FirstName: "Alice", Username: "alice"}
	ctx := context.Background()
	tok := telegramtest.Token

	g := startGateway(t, home, env)
	if err := emu.Send(ctx, tok, telegramtest.DM(alice, "tell me everything")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a preview recorded", func() bool { return countGatewayEvents(t, home, "GatewayReplyPreviewed") >= 1 })
	waitUntil(t, "the preview edited", func() bool {
		msgs, err := emu.BotMessages(ctx, tok, alice.ID)
		return err == nil && len(msgs) == 1 && strings.Contains(msgs[0].Message.Text, "Line 3 ")
	})
	g.kill()

	g = startGateway(t, home, env)
	waitUntil(t, "the delivery recorded", func() bool { return countGatewayEvents(t, home, "GatewayMessageDelivered") == 1 })
	time.Sleep(time.Second)
	msgs, err := emu.BotMessages(ctx, tok, alice.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].Message.Text != "The whole answer, after the restart." {
		var texts []string
		for _, m := range msgs {
			texts = append(texts, m.Message.Text)
		}
		t.Fatalf("after the restart the chat reads %q, want the one message edited into the answer", texts)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("%d model calls, want 2 (the killed one, its continuation)", n)
	}
	g.kill()
}
