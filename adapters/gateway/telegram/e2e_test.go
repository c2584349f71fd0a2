package telegram_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/actors/toolrun"
	"github.com/hermes-go/hermes/adapters/bus"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/gateway/telegram"
	"github.com/hermes-go/hermes/adapters/gateway/telegram/telegramtest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
)

// rig is the whole gateway in one process — event store, scripted model
// server, session manager, router, bus — with the real Telegram adapter
// talking to a Bot API server (the emulator, or the fake).
type rig struct {
	store   *embedded.Store
	llm     *llmtest.Server
	router  *gateway.Router
	adapter *telegram.Adapter
	served  *gw.Served
	stop    func()
}

type rigOptions struct {
	apiURL     string
	token      string
	webhookURL string
	listen     string
	secret     string
	cacheDir   string
	// tune, when set, changes the adapter's config (media, voice).
	tune func(*telegram.Config)
	// dir holds the event store (default: a new temporary directory): a
	// second rig on the same dir is the gateway restarted.
	dir string
	// tools are the sessions' tools beside the approval tool.
	tools []tool.Tool
	// editEvery paces the previews (Served.EditEvery).
	editEvery time.Duration
}

func newRig(t *testing.T, o rigOptions, cfg gateway.Config, script ...llmtest.Reply) *rig {
	t.Helper()
	dir := o.dir
	if dir == "" {
		dir = t.TempDir()
	}
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	llm := llmtest.New(script...)
	log := zerolog.Nop()
	sys := actors.NewSystem(log)
	b, err := bus.Open("", log)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NewSession == nil {
		cfg.NewSession = func(ctx context.Context, platform string) (string, error) {
			id := uuid.NewString()
			return id, session.Create(ctx, store, id, session.Start{Source: platform, Model: "gpt-4o-mini", System: "You are Hermes."})
		}
	}
	cfg.TypingEvery = time.Hour
	router := gateway.New(store, b.Transport, sys, cfg, log)
	deps := session.Deps{Store: store, Log: log, Provider: openai.NewChat(openai.Options{BaseURL: llm.URL + "/v1"}),
		Tools: tool.NewTools(append([]tool.Tool{gatewaytest.ApprovalTool(&terminal.Approver{Timeout: 20 * time.Second})}, o.tools...)...), Exec: toolrun.NewPool(sys, 8, 30*time.Second),
		Cfg: agent.Config{Model: "gpt-4o-mini"}, MaxTurns: 10, Asker: router.Asker()}
	mgr := session.NewManager(sys, deps)
	router.Sessions = mgr
	if o.token == "" {
		o.token = telegramtest.Token
	}
	if o.cacheDir == "" {
		o.cacheDir = filepath.Join(dir, "cache", "telegram")
	}
	tcfg := telegram.Config{Token: o.token, APIURL: o.apiURL, WebhookURL: o.webhookURL, WebhookListen: o.listen,
		WebhookSecret: o.secret, CacheDir: o.cacheDir, PollTimeout: 2 * time.Second, PollInterval: 50 * time.Millisecond, Log: log}
	if o.tune != nil {
		o.tune(&tcfg)
	}
	ad, err := telegram.New(tcfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = router.Run(ctx) }()
	<-router.Ready()
	served := gw.NewServed(ad, b, log)
	served.EditEvery = o.editEvery
	go func() { defer wg.Done(); _ = served.Serve(ctx) }()
	r := &rig{store: store, llm: llm, router: router, adapter: ad, served: served}
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			mgr.Shutdown()
			sys.Shutdown()
			b.Close()
			llm.Close()
			store.Close()
		})
	}
	t.Cleanup(r.stop)
	waitFor(t, "the adapter to connect", func() bool {
		if st := served.Status(); st.LastError != "" {
			t.Logf("adapter: %s", st.LastError)
		}
		return ad.Connected()
	})
	return r
}

func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if f() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("waited 20 s for %s", what)
}

func countTypes(t *testing.T, store events.Store, typ string) int {
	t.Helper()
	rs, err := store.ReadAll(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rs {
		if r.Type == typ {
			n++
		}
	}
	return n
}

var (
	alice = telegramtest.User{ID: 111, FirstName: "Alice", Username: "alice"}
	bob   = telegramtest.User{ID: 222, FirstName: "Bob"}
)

func allow(users ...string) gateway.Config {
	return gateway.Config{Auth: gateway.Auth{Pairing: true, Platform: map[string][]string{"telegram": users}}}
}

// An allowed user's message reaches the agent and the answer comes back in
// the emulator, as HTML, replying to the message; a long answer with a
// code block arrives as three messages with the block whole in one.
func TestEmulatorAnswersAndSplitsLongAnswers(t *testing.T) {
	emu := telegramtest.Start(t)
	long, block := gatewaytest.LongAnswer(24, 40, 50)
	r := newRig(t, rigOptions{apiURL: emu.URL}, allow("111"),
		llmtest.Reply{Content: "**Paris** is the capital <of France> & more."},
		llmtest.Reply{Content: long})
	ctx := context.Background()
	tok := telegramtest.Token

	if err := emu.Send(ctx, tok, telegramtest.DM(alice, "capital of France?")); err != nil {
		t.Fatal(err)
	}
	got := emu.WaitReceived(t, tok, alice.ID, 1, 20*time.Second)
	m := got[0]
	if m.Message.Text != "<b>Paris</b> is the capital &lt;of France&gt; &amp; more." || m.Message.ParseMode != "HTML" {
		t.Fatalf("answer %q (parse mode %q)", m.Message.Text, m.Message.ParseMode)
	}
	ids, err := emu.UserMessageIDs(ctx, tok)
	if err != nil || len(ids) != 1 {
		t.Fatalf("user messages %v %v", ids, err)
	}
	if m.Message.ReplyParameters == nil || m.Message.ReplyParameters.MessageID != ids[0] {
		t.Fatalf("the answer does not reply to message %d: %+v", ids[0], m.Message.ReplyParameters)
	}
	// The model saw the user's text, and the session is a telegram one.
	reqs := r.llm.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Raw), "capital of France?") {
		t.Fatalf("model requests: %d", len(reqs))
	}

	if err := emu.Send(ctx, tok, telegramtest.DM(alice, "now something long")); err != nil {
		t.Fatal(err)
	}
	got = emu.WaitReceived(t, tok, alice.ID, 4, 20*time.Second)
	time.Sleep(300 * time.Millisecond)
	if got, _ = emu.Received(ctx, tok, alice.ID); len(got) != 4 {
		t.Fatalf("%d messages, want 1 + 3", len(got))
	}
	parts := got[1:]
	ids, _ = emu.UserMessageIDs(ctx, tok)
	whole := 0
	for i, p := range parts {
		if n := len([]rune(p.Message.Text)); n == 0 {
			t.Fatalf("part %d is empty", i)
		}
		if i == 0 && (p.Message.ReplyParameters == nil || p.Message.ReplyParameters.MessageID != ids[1]) {
			t.Fatalf("the first part does not reply to the question: %+v", p.Message.ReplyParameters)
		}
		if i > 0 && p.Message.ReplyParameters != nil {
			t.Fatalf("part %d replies too", i)
		}
		if strings.Contains(p.Message.Text, telegram.HTML(block)) {
			whole++
		}
		if strings.Count(p.Message.Text, "<pre>") != strings.Count(p.Message.Text, "</pre>") {
			t.Fatalf("part %d has an unclosed <pre>", i)
		}
	}
	if whole != 1 {
		t.Fatalf("the code block is whole in %d of the parts", whole)
	}
	// Delivered, with the ids of the three parts.
	waitFor(t, "both replies recorded as delivered", func() bool { return countTypes(t, r.store, "GatewayMessageDelivered") == 2 })
	if !strings.Contains(allPayloads(t, r.store), `"platform_message_ids":["111:`) {
		t.Fatal("the delivery does not record the Telegram message ids")
	}
}

func allPayloads(t *testing.T, store events.Store) string {
	t.Helper()
	rs, err := store.ReadAll(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, r := range rs {
		b.Write(r.Payload)
		b.WriteByte('\n')
	}
	return b.String()
}

// In a forum group the bot answers only when mentioned (or replied to),
// in the topic the message came from.
func TestEmulatorGroupMentionsAndTopics(t *testing.T) {
	emu := telegramtest.Start(t)
	r := newRig(t, rigOptions{apiURL: emu.URL}, allow("111"), llmtest.Reply{Content: "in the topic"})
	ctx := context.Background()
	tok := telegramtest.Token
	group := telegramtest.Chat{ID: -100777, Type: "supergroup", Title: "team", IsForum: true}
	msg := func(text string) telegramtest.Message {
		return telegramtest.Message{From: alice, Chat: group, Text: text, MessageThreadID: 42, IsTopicMessage: true}
	}
	if err := emu.Send(ctx, tok, msg("chatting among ourselves")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if n := len(r.llm.Requests()); n != 0 {
		t.Fatalf("the bot answered a group message that did not mention it (%d calls)", n)
	}
	if err := emu.Send(ctx, tok, msg("@"+telegramtest.BotUsername+" what do you think?")); err != nil {
		t.Fatal(err)
	}
	got := emu.WaitReceived(t, tok, group.ID, 1, 20*time.Second)
	if got[0].Message.Text != "in the topic" || got[0].ThreadID() != 42 {
		t.Fatalf("answer %q in thread %d", got[0].Message.Text, got[0].ThreadID())
	}
}

// An approval question arrives with buttons; the user's press answers it.
func TestEmulatorApprovalButtons(t *testing.T) {
	emu := telegramtest.Start(t)
	r := newRig(t, rigOptions{apiURL: emu.URL}, allow("111"),
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		llmtest.Reply{Content: "deleted"})
	ctx := context.Background()
	tok := telegramtest.Token
	if err := emu.Send(ctx, tok, telegramtest.DM(alice, "clean the build dir")); err != nil {
		t.Fatal(err)
	}
	got := emu.WaitReceived(t, tok, alice.ID, 1, 20*time.Second)
	q := got[0]
	if !strings.Contains(q.Message.Text, "rm -rf build") || q.Message.ReplyMarkup == nil {
		t.Fatalf("approval %q without buttons", q.Message.Text)
	}
	var data []string
	for _, row := range q.Message.ReplyMarkup.InlineKeyboard {
		for _, b := range row {
			data = append(data, b.CallbackData)
		}
	}
	if len(data) == 0 || data[0] != "approval:once" {
		t.Fatalf("buttons %v", data)
	}
	// Someone else pressing the button decides nothing.
	if err := emu.Press(ctx, tok, bob, q, "approval:once"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if countTypes(t, r.store, "ApprovalDecided") != 0 {
		t.Fatal("someone else's press decided the approval")
	}
	if err := emu.Press(ctx, tok, alice, q, "approval:once"); err != nil {
		t.Fatal(err)
	}
	got = emu.WaitReceived(t, tok, alice.ID, 2, 20*time.Second)
	if got[1].Message.Text != "deleted" {
		t.Fatalf("after the press: %q", got[1].Message.Text)
	}
	if !strings.Contains(allPayloads(t, r.store), `"decision":"once","by":"user"`) {
		t.Fatal("the decision is not recorded as the user's")
	}
}
