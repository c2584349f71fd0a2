package matrix_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/hermes-go/hermes/actors/gateway"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/gateway/matrix"
	"github.com/hermes-go/hermes/adapters/gateway/matrix/matrixtest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/schema"
)

// world is a Dendrite with a bot and two people.
type world struct {
	srv        *matrixtest.Server
	bot        *matrixtest.User
	alice, bob *matrixtest.User
}

func newWorld(t testing.TB) *world {
	t.Helper()
	srv := matrixtest.Start(t)
	return &world{srv: srv, bot: srv.Register(t, "hermes"), alice: srv.Register(t, "alice"), bob: srv.Register(t, "bob")}
}

// adapter builds the bot's adapter; edit changes its configuration.
func (w *world) adapter(t *testing.T, edit func(*matrix.Config)) *matrix.Adapter {
	t.Helper()
	cfg := matrix.Config{Homeserver: w.srv.URL, UserID: string(w.bot.ID), AccessToken: w.bot.Token,
		AllowedUsers: []string{string(w.alice.ID)}, SyncTimeout: 2 * time.Second, Log: zerolog.Nop()}
	if edit != nil {
		edit(&cfg)
	}
	ad, err := matrix.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ad
}

// serve runs the whole gateway with the adapter and waits for its first
// sync.
func (w *world) serve(t *testing.T, ad *matrix.Adapter, cfg gateway.Config, script ...llmtest.Reply) *gatewaytest.Rig {
	t.Helper()
	if cfg.Auth.Platform == nil {
		cfg.Auth = gateway.Auth{Pairing: true, Platform: map[string][]string{matrix.Platform: {string(w.alice.ID)}}}
	}
	cfg.TypingEvery = time.Hour
	rig := gatewaytest.Start(t, gatewaytest.Options{Config: cfg, Script: script})
	served := rig.Serve(ad, nil)
	select {
	case <-ad.Ready():
	case <-time.After(30 * time.Second):
		t.Fatalf("the adapter did not sync in 30 s: %s", served.Status().LastError)
	}
	return rig
}

func content(ev *event.Event) *event.MessageEventContent { return ev.Content.AsMessage() }

// An allowed user's direct message is answered in Matrix HTML with the
// Markdown as the plain body, replying to the question; a long answer
// arrives in parts within MaxMessage, its code block whole in one part.
func TestDirectChatFormattingAndSplitting(t *testing.T) {
	w := newWorld(t)
	long, block := gatewaytest.LongAnswer(200, 100, 200)
	ad := w.adapter(t, nil)
	rig := w.serve(t, ad, gateway.Config{},
		llmtest.Reply{Content: "**Paris** is the capital <of France> & more."},
		llmtest.Reply{Content: long})
	dm := w.alice.DM(t, w.bot.ID)
	w.alice.WaitJoined(t, dm, w.bot.ID)
	q := w.alice.Text(t, dm, "capital of France?")
	got := w.alice.WaitFrom(t, dm, w.bot.ID, 1)
	m := content(got[0])
	if m.MsgType != event.MsgText || m.Body != "**Paris** is the capital <of France> & more." {
		t.Fatalf("answer %s %q", m.MsgType, m.Body)
	}
	if m.Format != event.FormatHTML || m.FormattedBody != "<strong>Paris</strong> is the capital &lt;of France&gt; &amp; more." {
		t.Fatalf("formatted body %q (%q)", m.FormattedBody, m.Format)
	}
	if m.RelatesTo.GetReplyTo() != q {
		t.Fatalf("the answer replies to %q, not to the question %q", m.RelatesTo.GetReplyTo(), q)
	}
	if m.Mentions == nil || len(m.Mentions.UserIDs) != 0 || m.Mentions.Room {
		t.Fatalf("the answer pings someone: %+v", m.Mentions)
	}

	q2 := w.alice.Text(t, dm, "now something long")
	gatewaytest.WaitFor(t, "both answers delivered", func() bool {
		return gatewaytest.CountTypes(t, rig.Store, "GatewayMessageDelivered") == 2
	})
	got = w.alice.WaitFrom(t, dm, w.bot.ID, 2)
	parts := got[1:]
	if len(parts) < 3 {
		t.Fatalf("an answer of %d bytes came as %d messages", len(long), len(parts))
	}
	whole := 0
	var joined []string
	for i, p := range parts {
		c := content(p)
		if n := len([]rune(c.Body)); n == 0 || n > matrix.MaxMessage {
			t.Fatalf("part %d has %d characters", i, n)
		}
		if i == 0 && c.RelatesTo.GetReplyTo() != q2 {
			t.Fatalf("the first part does not reply to the question")
		}
		if i > 0 && c.RelatesTo != nil {
			t.Fatalf("part %d relates to %+v", i, c.RelatesTo)
		}
		if strings.Contains(c.Body, block) && strings.Contains(c.FormattedBody, `<pre><code class="language-go">`) {
			whole++
		}
		if strings.Count(c.FormattedBody, "<pre>") != strings.Count(c.FormattedBody, "</pre>") {
			t.Fatalf("part %d has an unclosed <pre>", i)
		}
		joined = append(joined, strings.Fields(c.Body)...)
	}
	if whole != 1 {
		t.Fatalf("the code block is whole in %d parts", whole)
	}
	if strings.Join(joined, " ") != strings.Join(strings.Fields(long), " ") {
		t.Fatal("the parts put together are not the answer")
	}
	if !strings.Contains(gatewaytest.Payloads(t, rig.Store), `"platform_message_ids":["$`) {
		t.Fatal("the delivery does not record the event ids")
	}
}

// thread sends text to room in the thread of root.
func thread(t *testing.T, u *matrixtest.User, room id.RoomID, root id.EventID, text string) id.EventID {
	t.Helper()
	c := &event.MessageEventContent{MsgType: event.MsgText, Body: text}
	c.RelatesTo = (&event.RelatesTo{}).SetThread(root, root)
	return u.Say(t, room, c)
}

// In a group room the bot answers only when addressed; each thread is a
// conversation of its own, answered in the thread, and a thread the bot
// answered in needs no more mentions.
func TestThreadsAreSessions(t *testing.T) {
	w := newWorld(t)
	ad := w.adapter(t, nil)
	rig := w.serve(t, ad, gateway.Config{},
		llmtest.Reply{Content: "hello room"},
		llmtest.Reply{Content: "answer in thread one"},
		llmtest.Reply{Content: "follow-up in thread one"},
		llmtest.Reply{Content: "answer in thread two"})
	room := w.alice.Group(t, "team", w.bob.ID, w.bot.ID)
	w.bob.Join(t, room)
	w.alice.WaitJoined(t, room, w.bot.ID)

	root1 := w.alice.Text(t, room, "topic one, among ourselves")
	root2 := w.alice.Text(t, room, "topic two, among ourselves")
	hi := w.alice.Text(t, room, "hermes: hello")
	got := w.alice.WaitFrom(t, room, w.bot.ID, 1)
	if c := content(got[0]); c.Body != "hello room" || c.RelatesTo.GetThreadParent() != "" || c.RelatesTo.GetReplyTo() != hi {
		t.Fatalf("main timeline answer %q %+v", c.Body, c.RelatesTo)
	}
	q1 := thread(t, w.alice, room, root1, "hermes: first thread question")
	got = w.alice.WaitFrom(t, room, w.bot.ID, 2)
	if c := content(got[1]); c.Body != "answer in thread one" || c.RelatesTo.GetThreadParent() != root1 || c.RelatesTo.GetNonFallbackReplyTo() != q1 {
		t.Fatalf("thread answer %q %+v", c.Body, c.RelatesTo)
	}
	thread(t, w.alice, room, root1, "and without naming you?")
	got = w.alice.WaitFrom(t, room, w.bot.ID, 3)
	if c := content(got[2]); c.Body != "follow-up in thread one" || c.RelatesTo.GetThreadParent() != root1 {
		t.Fatalf("follow-up %q %+v", c.Body, c.RelatesTo)
	}
	thread(t, w.alice, room, root2, "hermes: second thread question")
	got = w.alice.WaitFrom(t, room, w.bot.ID, 4)
	if c := content(got[3]); c.Body != "answer in thread two" || c.RelatesTo.GetThreadParent() != root2 {
		t.Fatalf("thread two answer %q %+v", c.Body, c.RelatesTo)
	}
	reqs := rig.LLM.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model calls, want 4: the messages among ourselves started turns", len(reqs))
	}
	last := string(reqs[3].Raw)
	if strings.Contains(last, "first thread") || strings.Contains(last, "hello") || !strings.Contains(last, "second thread question") {
		t.Fatalf("thread two's conversation carries another's: %s", last)
	}
	if strings.Contains(string(reqs[2].Raw), "hello") || !strings.Contains(string(reqs[2].Raw), "first thread question") {
		t.Fatalf("thread one's follow-up lost its thread or carries the room's: %s", reqs[2].Raw)
	}
	if n := gatewaytest.CountTypes(t, rig.Store, "GatewaySessionBound"); n != 3 {
		t.Fatalf("%d sessions, want 3 (the room, two threads)", n)
	}
}

// membership is who's membership in room, as u sees it.
func membership(u *matrixtest.User, room id.RoomID, who id.UserID) event.Membership {
	var m event.MemberEventContent
	if err := u.Client.StateEvent(context.Background(), room, event.StateMember, string(who), &m); err != nil {
		return ""
	}
	return m.Membership
}

// The bot joins the configured rooms that exist, and rooms allowed users
// invite it to, and declines other invites — except, with PairingInvites, direct chats, where a stranger
// gets a pairing code and nothing else.
func TestInvites(t *testing.T) {
	w := newWorld(t)
	carol := w.srv.Register(t, "carol")
	lobby, err := w.bob.Client.CreateRoom(context.Background(), &mautrix.ReqCreateRoom{Preset: "public_chat", RoomAliasName: "lobby"})
	if err != nil {
		t.Fatal(err)
	}
	ad := w.adapter(t, func(c *matrix.Config) {
		c.PairingInvites = true
		c.Rooms = []string{"#nowhere:" + matrixtest.ServerName, "#lobby:" + matrixtest.ServerName}
	})
	rig := w.serve(t, ad, gateway.Config{}, llmtest.Reply{Content: "never sent"})

	allowed := w.alice.Group(t, "alice's room", w.bot.ID)
	refused := w.bob.Group(t, "bob's room", w.bot.ID)
	dm := carol.DM(t, w.bot.ID)
	w.alice.WaitJoined(t, allowed, w.bot.ID)
	w.bob.WaitJoined(t, lobby.RoomID, w.bot.ID) // a configured room (the missing one is skipped)
	carol.WaitJoined(t, dm, w.bot.ID)
	gatewaytest.WaitFor(t, "the bot to decline bob's invite", func() bool { return membership(w.bob, refused, w.bot.ID) == event.MembershipLeave })

	carol.Text(t, dm, "let me in")
	got := carol.WaitFrom(t, dm, w.bot.ID, 1)
	c := content(got[0])
	if c.MsgType != event.MsgNotice || !strings.Contains(c.Body, "hermes pairing approve") {
		t.Fatalf("pairing notice %s %q", c.MsgType, c.Body)
	}
	if n := len(rig.LLM.Requests()); n != 0 {
		t.Fatalf("the model ran for a stranger (%d calls)", n)
	}
	if n := gatewaytest.CountTypes(t, rig.Store, "GatewayInboundRefused"); n != 1 {
		t.Fatalf("%d refusals recorded", n)
	}
}

// recorder is an Inbox that keeps what it is handed.
type recorder struct {
	mu  sync.Mutex
	got []schema.Inbound
}

func (r *recorder) inbox(_ context.Context, in schema.Inbound) error {
	r.mu.Lock()
	r.got = append(r.got, in)
	r.mu.Unlock()
	return nil
}

func (r *recorder) texts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, in := range r.got {
		out = append(out, in.Text)
	}
	return out
}

// run runs ad with a fresh recorder until the returned stop is called.
func run(t *testing.T, ad *matrix.Adapter) (*recorder, func()) {
	t.Helper()
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ad.Run(ctx, rec.inbox) }()
	select {
	case <-ad.Ready():
	case err := <-done:
		cancel()
		t.Fatalf("Run ended before its first sync: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("no first sync in 30 s")
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return rec, stop
}

func waitTexts(t *testing.T, rec *recorder, want ...string) {
	t.Helper()
	gatewaytest.WaitFor(t, "messages "+strings.Join(want, ", "), func() bool { return len(rec.texts()) >= len(want) })
	if got := rec.texts(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("handed over %q, want %q", got, want)
	}
}

// The sync token is saved under StateDir: a restarted adapter hands over
// what was sent while it was down and nothing it handed over before; an
// adapter without a token skips the history from before its start.
func TestSyncTokenSurvivesRestart(t *testing.T) {
	w := newWorld(t)
	state := t.TempDir()
	dm := w.alice.DM(t, w.bot.ID)
	w.bot.Join(t, dm)
	w.alice.Text(t, dm, "before any adapter")

	rec, stop := run(t, w.adapter(t, func(c *matrix.Config) { c.StateDir = state }))
	w.alice.Text(t, dm, "one")
	waitTexts(t, rec, "one")
	stop()
	w.alice.Text(t, dm, "while it was down")

	rec, stop = run(t, w.adapter(t, func(c *matrix.Config) { c.StateDir = state }))
	w.alice.Text(t, dm, "two")
	waitTexts(t, rec, "while it was down", "two")
	if in := rec.got[0]; in.Platform != matrix.Platform || in.Chat != string(dm) || in.ChatType != "dm" || in.User != string(w.alice.ID) || !strings.HasPrefix(in.MessageID, "$") {
		t.Fatalf("inbound %+v", in)
	}
	stop()

	rec, _ = run(t, w.adapter(t, func(c *matrix.Config) { c.StateDir = t.TempDir() }))
	w.alice.Text(t, dm, "three")
	waitTexts(t, rec, "three")
}

// A refused token or password ends Run with a *gw.PermanentError.
func TestBadCredentialsArePermanent(t *testing.T) {
	w := newWorld(t)
	for name, edit := range map[string]func(*matrix.Config){
		"token":      func(c *matrix.Config) { c.AccessToken = "syt_not_a_token" },
		"password":   func(c *matrix.Config) { c.AccessToken, c.Password = "", "wrong" },
		"other user": func(c *matrix.Config) { c.AccessToken = w.alice.Token },
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := w.adapter(t, edit).Run(ctx, (&recorder{}).inbox)
			var perm *gw.PermanentError
			if !errors.As(err, &perm) {
				t.Fatalf("Run: %v, want a permanent error", err)
			}
			if strings.Contains(err.Error(), w.alice.Token) {
				t.Fatal("the error quotes the token")
			}
		})
	}
	// The right password logs in (and reuses one device).
	rec, _ := run(t, w.adapter(t, func(c *matrix.Config) { c.AccessToken, c.Password = "", matrixtest.Password("hermes") }))
	if rec == nil {
		t.Fatal("no recorder")
	}
}

// Dendrite's M_LIMIT_EXCEEDED becomes a *gw.RetryAfterError carrying
// retry_after_ms; a room the bot is not in and a malformed chat id are
// permanent failures.
func TestSendFailures(t *testing.T) {
	w := newWorld(t)
	limited := w.srv.Register(t, matrixtest.RateLimited)
	room := limited.Group(t, "limited's room")
	ad, err := matrix.New(matrix.Config{Homeserver: w.srv.URL, UserID: string(limited.ID), AccessToken: limited.Token, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var ra *gw.RetryAfterError
	for i := 0; i < 10 && ra == nil; i++ {
		_, err := ad.Send(ctx, schema.Outbound{Kind: "typing", Platform: matrix.Platform, Chat: string(room)})
		if err != nil && !errors.As(err, &ra) {
			t.Fatalf("typing %d: %v", i, err)
		}
	}
	if ra == nil {
		t.Fatalf("no rate limit after 10 typing notices (threshold %d)", matrixtest.Threshold)
	}
	if ra.After != matrixtest.Cooloff {
		t.Fatalf("retry after %s, want the server's %s", ra.After, matrixtest.Cooloff)
	}

	bot := w.adapter(t, nil)
	elsewhere := w.alice.Group(t, "not the bot's")
	var perm *gw.PermanentError
	if _, err := bot.Send(ctx, schema.Outbound{Kind: "reply", Chat: string(elsewhere), Text: "hi", ReplyID: "r0"}); !errors.As(err, &perm) {
		t.Fatalf("send to a room the bot is not in: %v", err)
	}
	if _, err := bot.Send(ctx, schema.Outbound{Kind: "reply", Chat: "12345", Text: "hi"}); !errors.As(err, &perm) {
		t.Fatalf("send to a malformed room id: %v", err)
	}
	if _, err := bot.Send(ctx, schema.Outbound{Kind: "reply", Chat: string(room), Text: "  "}); !errors.As(err, &perm) {
		t.Fatalf("send of an empty message: %v", err)
	}
}

// A reply sent again (the gateway's retry after a lost answer) is not
// shown twice: the transaction ids repeat, and the homeserver answers
// with the events it already has.
func TestResentReplyIsNotDuplicated(t *testing.T) {
	w := newWorld(t)
	dm := w.alice.DM(t, w.bot.ID)
	w.bot.Join(t, dm)
	bot := w.adapter(t, nil)
	out := schema.Outbound{Kind: "reply", Platform: matrix.Platform, Chat: string(dm), ReplyID: "reply-1", Text: strings.Repeat("word ", 5000)}
	ctx := context.Background()
	first, err := bot.Send(ctx, out)
	if err != nil || len(first) != 2 {
		t.Fatalf("first send: %v %v", first, err)
	}
	again, err := bot.Send(ctx, out)
	if err != nil || strings.Join(again, ",") != strings.Join(first, ",") {
		t.Fatalf("the resend made new events %v (first %v): %v", again, first, err)
	}
	if got, err := w.alice.From(ctx, dm, w.bot.ID); err != nil || len(got) != 2 {
		t.Fatalf("alice sees %d messages, want 2: %v", len(got), err)
	}
}

// An end-to-end encrypted room is told once that the bot cannot read it;
// plain messages there are still answered.
func TestEncryptedRoomIsTold(t *testing.T) {
	w := newWorld(t)
	ad := w.adapter(t, nil)
	rig := w.serve(t, ad, gateway.Config{}, llmtest.Reply{Content: "plain answer"})
	ctx := context.Background()
	enc := &event.Event{Type: event.StateEncryption, StateKey: new(string),
		Content: event.Content{Raw: map[string]any{"algorithm": "m.megolm.v1.aes-sha2"}}}
	resp, err := w.alice.Client.CreateRoom(ctx, &mautrix.ReqCreateRoom{Preset: "trusted_private_chat", IsDirect: true,
		Invite: []id.UserID{w.bot.ID}, InitialState: []*event.Event{enc}})
	if err != nil {
		t.Fatal(err)
	}
	room := resp.RoomID
	w.alice.WaitJoined(t, room, w.bot.ID)
	for i := range 2 {
		cipher := map[string]any{"algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "AwgAEn" + strings.Repeat("x", i+10),
			"device_id": "DEV", "sender_key": "key", "session_id": "sess"}
		if _, err := w.alice.Client.SendMessageEvent(ctx, room, event.EventEncrypted, cipher); err != nil {
			t.Fatal(err)
		}
	}
	w.alice.Text(t, room, "and in plain text?")
	got := w.alice.WaitFrom(t, room, w.bot.ID, 2)
	if c := content(got[0]); c.MsgType != event.MsgNotice || !strings.Contains(c.Body, "end-to-end encrypted") {
		t.Fatalf("first message %s %q", c.MsgType, c.Body)
	}
	if c := content(got[1]); c.Body != "plain answer" {
		t.Fatalf("second message %q", c.Body)
	}
	if len(got) != 2 {
		t.Fatalf("%d messages from the bot, want the notice once and the answer", len(got))
	}
	if n := len(rig.LLM.Requests()); n != 1 {
		t.Fatalf("%d model calls, want 1", n)
	}
}

// With a password, a revoked token is replaced by a new login, on the
// same device, and no message is lost.
func TestRevokedTokenLogsInAgain(t *testing.T) {
	w := newWorld(t)
	dm := w.alice.DM(t, w.bot.ID)
	w.bot.Join(t, dm)
	ad := w.adapter(t, func(c *matrix.Config) {
		c.AccessToken, c.Password = "", matrixtest.Password("hermes")
		c.Log = zerolog.New(zerolog.NewTestWriter(t))
	})
	rig := gatewaytest.Start(t, gatewaytest.Options{Script: []llmtest.Reply{{Content: "one"}, {Content: "two"}},
		Config: gateway.Config{Auth: gateway.Auth{Platform: map[string][]string{matrix.Platform: {string(w.alice.ID)}}}, TypingEvery: time.Hour}})
	rig.Serve(ad, nil)
	<-ad.Ready()
	w.alice.Text(t, dm, "first")
	w.alice.WaitFrom(t, dm, w.bot.ID, 1)
	// Every token of the bot's account dies (the test's own as well).
	if _, err := w.bot.Client.LogoutAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.alice.Text(t, dm, "second")
	got := w.alice.WaitFrom(t, dm, w.bot.ID, 2)
	if c := content(got[1]); c.Body != "two" {
		t.Fatalf("after the new login: %q", c.Body)
	}
}
