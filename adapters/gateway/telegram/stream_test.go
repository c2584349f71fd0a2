package telegram_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/gateway/telegram"
	"github.com/hermes-go/hermes/adapters/gateway/telegram/telegramtest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// counter sits between the adapter and the emulator and counts the Bot API
// methods called.
type counter struct {
	*httptest.Server
	mu    sync.Mutex
	calls map[string]int
}

func countCalls(t *testing.T, target string) *counter {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	c := &counter{calls: map[string]int{}}
	proxy := httputil.NewSingleHostReverseProxy(u)
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		c.mu.Lock()
		c.calls[method]++
		c.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *counter) count(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[method]
}

// fakeTerminal is a tool named terminal that answers at once, for the
// progress lines its calls make.
type fakeTerminal struct{}

func (fakeTerminal) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "terminal", Description: "runs a command", Parameters: map[string]any{"type": "object",
		"properties": map[string]any{"command": map[string]any{"type": "string"}}}}
}
func (fakeTerminal) Flags() tool.Flags { return tool.Flags{} }
func (fakeTerminal) Run(_ context.Context, raw json.RawMessage) (string, error) {
	return "ran " + string(raw), nil
}

func streaming(cfg gateway.Config, d gateway.Display) gateway.Config {
	cfg.Display = func(platform string) gateway.Display {
		if platform != telegram.Platform {
			return gateway.Display{}
		}
		return d
	}
	return cfg
}

// longAnswer is an answer of n numbered lines.
func longAnswer(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "Line %d of the answer, written slowly so that it streams.\n", i)
	}
	return strings.TrimSpace(b.String())
}

// A long answer written slowly reaches the chat as one message, sent once
// and edited as the text grows (fewer edits than the model sent pieces,
// paced by EditEvery), that reads the whole answer at the end.
func TestEmulatorStreamsAnswerByEditing(t *testing.T) {
	emu := telegramtest.Start(t)
	api := countCalls(t, emu.URL)
	answer := longAnswer(30)
	const pieces, every = 30, 300 * time.Millisecond
	r := newRig(t, rigOptions{apiURL: api.URL, editEvery: every}, streaming(allow("111"), gateway.Display{Streaming: true}),
		llmtest.Reply{Content: answer, Pieces: pieces, PieceEvery: 60 * time.Millisecond})
	start := time.Now()
	if err := emu.Send(context.Background(), telegramtest.Token, telegramtest.DM(alice, "write a lot")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the answer delivered", func() bool { return countTypes(t, r.store, "GatewayMessageDelivered") == 1 })
	elapsed := time.Since(start)
	msgs, err := emu.BotMessages(context.Background(), telegramtest.Token, alice.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 {
		t.Fatalf("%d bot messages, want the one edited: %+v", len(msgs), msgs)
	}
	if got, want := msgs[0].Message.Text, telegram.HTML(answer); got != want {
		t.Fatalf("the message reads\n%q\nwant the answer\n%q", got, want)
	}
	if msgs[0].Message.ReplyParameters == nil {
		t.Error("the streamed message does not reply to the message answered")
	}
	sends, edits := api.count("sendMessage"), api.count("editMessageText")
	t.Logf("%d pieces streamed in %s: %d sendMessage, %d editMessageText (EditEvery %s)", pieces, elapsed, sends, edits, every)
	if sends != 1 {
		t.Errorf("sendMessage called %d times, want 1", sends)
	}
	if edits < 2 {
		t.Errorf("editMessageText called %d times: the answer was not streamed", edits)
	}
	// Paced: at most one call per EditEvery while the answer streamed, and
	// the final edit; never one per piece.
	if most := int(elapsed/every) + 2; sends+edits > most || edits >= pieces {
		t.Errorf("%d sends and %d edits in %s with EditEvery %s (at most %d), for %d pieces", sends, edits, elapsed, every, most, pieces)
	}
	if n := countTypes(t, r.store, "GatewayReplyPreviewed"); n != 1 {
		t.Errorf("%d previews recorded, want 1", n)
	}
	if n := countTypes(t, r.store, "GatewayReplyRequested"); n != 1 {
		t.Errorf("%d replies recorded, want 1", n)
	}
}

// A turn's tool calls make progress lines in one message, edited as calls
// come, in the modes that show them: all (each call), new (only when the
// tool changes), verbose (the arguments whole); off shows none.
func TestEmulatorToolProgressModes(t *testing.T) {
	emu := telegramtest.Start(t)
	for i, tc := range []struct {
		mode  string
		lines []string // the progress message's lines ("": none)
	}{
		{gateway.ProgressOff, nil},
		{gateway.ProgressNew, []string{`💻 terminal: "ls -la"`}},
		{gateway.ProgressAll, []string{`💻 terminal: "ls -la"`, `💻 terminal: "pwd"`}},
		{gateway.ProgressVerbose, []string{`💻 terminal(command)`, `{"command":"ls -la"}`, `💻 terminal(command)`, `{"command":"pwd"}`}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			user := telegramtest.User{ID: int64(500 + i), FirstName: "P" + tc.mode}
			r := newRig(t, rigOptions{apiURL: emu.URL, tools: []tool.Tool{fakeTerminal{}}, editEvery: 50 * time.Millisecond},
				streaming(allow(fmt.Sprint(user.ID)), gateway.Display{ToolProgress: tc.mode}),
				llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "terminal", Args: `{"command":"ls -la"}`}}},
				llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c2", Name: "terminal", Args: `{"command":"pwd"}`}}},
				llmtest.Reply{Content: "Both ran."})
			if err := emu.Send(context.Background(), telegramtest.Token, telegramtest.DM(user, "run two commands")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the answer delivered", func() bool { return countTypes(t, r.store, "GatewayMessageDelivered") == 1 })
			msgs, err := emu.BotMessages(context.Background(), telegramtest.Token, user.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := 1
			if tc.lines != nil {
				want = 2
			}
			if len(msgs) != want {
				t.Fatalf("%d bot messages, want %d: %+v", len(msgs), want, msgs)
			}
			if last := msgs[len(msgs)-1].Message.Text; last != "Both ran." {
				t.Fatalf("the answer reads %q", last)
			}
			if tc.lines == nil {
				return
			}
			if got, want := msgs[0].Message.Text, telegram.HTML(strings.Join(tc.lines, "\n")); got != want {
				t.Fatalf("progress reads\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// The gateway stops while an answer streams, with its preview on the
// chat; restarted, it finishes the turn and edits that preview into the
// answer: one message, reading the whole answer, delivered once.
func TestEmulatorRestartMidStreamDeliversOnce(t *testing.T) {
	emu := telegramtest.Start(t)
	dir := t.TempDir()
	cfg := streaming(allow("111"), gateway.Display{Streaming: true})
	r := newRig(t, rigOptions{apiURL: emu.URL, dir: dir, editEvery: 100 * time.Millisecond}, cfg,
		llmtest.Reply{Content: longAnswer(40), Pieces: 40, PieceEvery: 150 * time.Millisecond})
	if err := emu.Send(context.Background(), telegramtest.Token, telegramtest.DM(alice, "write a lot")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a preview recorded", func() bool { return countTypes(t, r.store, "GatewayReplyPreviewed") >= 1 })
	r.stop()
	msgs, err := emu.BotMessages(context.Background(), telegramtest.Token, alice.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].Message.Text == "" {
		t.Fatalf("before the restart: %+v", msgs)
	}

	final := "The whole answer, finished after the restart."
	r2 := newRig(t, rigOptions{apiURL: emu.URL, dir: dir, editEvery: 100 * time.Millisecond}, cfg, llmtest.Reply{Content: final})
	waitFor(t, "the answer delivered", func() bool { return countTypes(t, r2.store, "GatewayMessageDelivered") == 1 })
	time.Sleep(300 * time.Millisecond)
	msgs, err = emu.BotMessages(context.Background(), telegramtest.Token, alice.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].Message.Text != final {
		t.Fatalf("after the restart, want the preview edited into the answer: %+v", msgs)
	}
	if n := countTypes(t, r2.store, "GatewayReplyRequested"); n != 1 {
		t.Fatalf("%d replies recorded", n)
	}
}

// A streamed answer that names files: its preview is edited into the text
// (the MEDIA: tags out), and the files follow as messages of their own.
func TestFakeStreamedReplyWithMedia(t *testing.T) {
	srv := telegramtest.NewServer(telegramtest.Token)
	defer srv.Close()
	root := t.TempDir()
	png := filepath.Join(root, "cat.png")
	if err := os.WriteFile(png, append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1}, 64)...), 0o600); err != nil {
		t.Fatal(err)
	}
	answer := "Here is your cat, drawn with care and whiskers:\nMEDIA:" + png
	r := newRig(t, rigOptions{apiURL: srv.URL, editEvery: 20 * time.Millisecond, tune: func(c *telegram.Config) { c.MediaRoots = []string{root} }},
		streaming(allow("111"), gateway.Display{Streaming: true}), llmtest.Reply{Content: answer, Pieces: 6, PieceEvery: 80 * time.Millisecond})
	srv.Push(dmUpdate(alice, 3, "draw me a cat"))
	waitFor(t, "the reply to be delivered", func() bool { return countTypes(t, r.store, "GatewayMessageDelivered") == 1 })
	if p := srv.Calls("sendPhoto"); len(p) != 1 || p[0].Files["photo"].Name != "cat.png" {
		t.Fatalf("sendPhoto %+v", p)
	}
	sends, edits := srv.Calls("sendMessage"), srv.Calls("editMessageText")
	if len(sends) != 1 || len(edits) == 0 {
		t.Fatalf("%d sendMessage, %d editMessageText: want the preview sent once and edited", len(sends), len(edits))
	}
	if last := edits[len(edits)-1].Params["text"].(string); last != telegram.HTML("Here is your cat, drawn with care and whiskers:") {
		t.Fatalf("the preview was left reading %q", last)
	}
	for _, c := range append(sends, edits...) {
		if text := c.Params["text"].(string); strings.Contains(text, "MEDIA:") || strings.Contains(text, root) {
			t.Fatalf("a preview showed the file's tag: %q", text)
		}
	}
}

// The gateway stops after the answer was recorded but before Telegram took
// the edit that delivers it (Telegram answering 5xx meanwhile); restarted,
// it sends the answer from its outbox by editing the recorded preview: one
// message, never a second one beside it.
func TestFakeRestartBeforeFinalEditDeliversOnce(t *testing.T) {
	srv := telegramtest.NewServer(telegramtest.Token)
	defer srv.Close()
	dir := t.TempDir()
	cfg := streaming(allow("111"), gateway.Display{Streaming: true})
	answer := "The answer, streamed, then delivered by an edit after a restart."
	// Written slowly, so that a preview is sent before the answer is
	// recorded, however the machine is loaded.
	r := newRig(t, rigOptions{apiURL: srv.URL, dir: dir, editEvery: 20 * time.Millisecond}, cfg,
		llmtest.Reply{Content: answer, Pieces: 6, PieceEvery: 150 * time.Millisecond})
	srv.Fail("editMessageText", telegramtest.Failure{Code: 502}, telegramtest.Failure{Code: 502}, telegramtest.Failure{Code: 502})
	srv.Push(dmUpdate(alice, 7, "answer me"))
	waitFor(t, "the answer recorded and its preview too", func() bool {
		return countTypes(t, r.store, "GatewayReplyRequested") == 1 && countTypes(t, r.store, "GatewayReplyPreviewed") == 1
	})
	waitFor(t, "Telegram to refuse the edit", func() bool {
		for _, c := range srv.Calls("editMessageText") {
			if c.Status == 502 {
				return true
			}
		}
		return false
	})
	r.stop()
	if n := countDelivered(t, srv); n != 0 {
		t.Fatalf("delivered before the restart (%d): the test did not cut it short", n)
	}

	r2 := newRig(t, rigOptions{apiURL: srv.URL, dir: dir, editEvery: 20 * time.Millisecond}, cfg)
	waitFor(t, "the answer delivered", func() bool { return countTypes(t, r2.store, "GatewayMessageDelivered") == 1 })
	if n := len(srv.Calls("sendMessage")); n != 1 {
		t.Fatalf("sendMessage called %d times: the answer came beside its preview", n)
	}
	if n := countDelivered(t, srv); n != 1 {
		t.Fatalf("%d successful edits to the answer", n)
	}
	if n := countTypes(t, r2.store, "GatewayReplyRequested"); n != 1 {
		t.Fatalf("%d replies recorded", n)
	}
}

// countDelivered counts the edits Telegram took that made a message read
// the whole answer.
func countDelivered(t *testing.T, srv *telegramtest.Server) int {
	t.Helper()
	n := 0
	for _, c := range srv.Calls("editMessageText") {
		if c.Status == 0 && strings.Contains(fmt.Sprint(c.Params["text"]), "after a restart.") {
			n++
		}
	}
	return n
}
