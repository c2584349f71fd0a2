package xmpp_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/tool"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/gateway/xmpp"
	"github.com/hermes-go/hermes/adapters/gateway/xmpp/xmpptest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
	"github.com/hermes-go/hermes/schema"
)

const (
	botJID = "hermes@" + xmpptest.Domain
	room   = "team@" + xmpptest.MUC
)

// world is Prosody with the bot's account and three people, alice and bob
// on the allow-list, carol not.
type world struct {
	srv               *xmpptest.Server
	alice, bob, carol *xmpptest.Client
}

func newWorld(t *testing.T) *world {
	t.Helper()
	srv := xmpptest.Start(t)
	srv.Register("hermes", "bot-secret")
	for _, u := range []string{"alice", "bob", "carol"} {
		srv.Register(u, u+"-pass")
	}
	return &world{srv: srv, alice: srv.Connect("alice", "alice-pass"), bob: srv.Connect("bob", "bob-pass"), carol: srv.Connect("carol", "carol-pass")}
}

// bot starts the gateway (router, sessions, scripted model) with the XMPP
// adapter logged in as hermes@localhost, and waits until it is connected.
func (w *world) bot(t *testing.T, rooms []string, script ...llmtest.Reply) (*gatewaytest.Rig, *watched, *gw.Served) {
	t.Helper()
	rig := gatewaytest.Start(t, gatewaytest.Options{Script: script,
		Tools: []tool.Tool{gatewaytest.ApprovalTool(&terminal.Approver{Timeout: 20 * time.Second})},
		Config: gateway.Config{TypingEvery: time.Hour, Auth: gateway.Auth{Pairing: true,
			Platform: map[string][]string{"xmpp": {"alice@localhost", "bob@localhost"}}}}})
	ad, err := xmpp.New(xmpp.Config{JID: botJID, Password: "bot-secret", Server: w.srv.Addr, Rooms: rooms,
		TLS: w.srv.TLS(), MaxBackoff: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	wa := &watched{Adapter: ad}
	served := rig.Serve(wa, nil)
	gatewaytest.WaitFor(t, "the adapter to connect", func() bool {
		if st := served.Status(); st.LastError != "" {
			t.Logf("adapter: %s", st.LastError)
		}
		return ad.Connected()
	})
	return rig, wa, served
}

// watched is the adapter with a count of the sends it failed.
type watched struct {
	*xmpp.Adapter
	failed atomic.Int64
}

func (w *watched) Send(ctx context.Context, out schema.Outbound) ([]string, error) {
	ids, err := w.Adapter.Send(ctx, out)
	if err != nil {
		w.failed.Add(1)
	}
	return ids, err
}

// An allowed user's message reaches the agent and the answer comes back
// as a chat message with its characters intact; someone not on the
// allow-list gets a pairing code and no model call, and is answered once
// the code is approved.
func TestDirectChatAnswersAndPairing(t *testing.T) {
	w := newWorld(t)
	answer := "**Paris** <is> the capital & 'more' \"quoted\" — ünïcödé 🚀\n\n```go\nif a < b && c > d {}\n```"
	rig, _, _ := w.bot(t, nil, llmtest.Reply{Content: answer}, llmtest.Reply{Content: "hello, Carol"})

	w.alice.Say(botJID, "capital of France? <&>")
	got := w.alice.Wait(botJID, 1)
	if got[0].Body != answer || got[0].Type != "chat" {
		t.Fatalf("answer %q (type %q), want %q", got[0].Body, got[0].Type, answer)
	}
	reqs := rig.LLM.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Raw), `capital of France? \u003c\u0026\u003e`) {
		t.Fatalf("the model did not see the text as sent: %d requests", len(reqs))
	}
	gatewaytest.WaitFor(t, "the reply recorded as delivered", func() bool {
		return gatewaytest.CountTypes(t, rig.Store, "GatewayMessageDelivered") == 1
	})
	if p := gatewaytest.Payloads(t, rig.Store); !strings.Contains(p, `"user":"alice@localhost"`) {
		t.Fatal("the user is not recorded by bare JID")
	}

	w.carol.Say(botJID, "let me in")
	text := w.carol.Wait(botJID, 1)[0].Body
	if !strings.Contains(text, "hermes pairing approve") {
		t.Fatalf("pairing notice %q", text)
	}
	code := strings.Fields(strings.SplitAfter(text, "approve ")[1])[0]
	if len(code) != gateway.CodeLength {
		t.Fatalf("code %q in %q", code, text)
	}
	if n := len(rig.LLM.Requests()); n != 1 {
		t.Fatalf("the agent ran for an unknown user (%d model calls)", n)
	}
	ctx := context.Background()
	p, err := gateway.LoadPairings(ctx, rig.Store)
	if err != nil {
		t.Fatal(err)
	}
	who, err := p.Approve(ctx, rig.Store, code, time.Now())
	if err != nil || who.User != "carol@localhost" || who.Platform != "xmpp" {
		t.Fatalf("approve: %v %+v", err, who)
	}
	w.carol.Say(botJID, "hi again")
	if got := w.carol.Wait(botJID, 2); got[1].Body != "hello, Carol" {
		t.Fatalf("after pairing: %q", got[1].Body)
	}
}

// In a room the bot answers only messages that name it, in the room; the
// history the room replays when the bot joins — a mention among it — is
// not answered; the user is the occupant's real JID, so an occupant off
// the allow-list is not answered (and gets no pairing code in a room).
func TestRoomMentionsAndHistory(t *testing.T) {
	w := newWorld(t)
	w.alice.Join(room, "Alice")
	w.alice.SayRoom(room, "hermes: are you there? (said before you came)")
	w.alice.Wait(room, 1) // the room echoed it: it is in the history
	rig, _, _ := w.bot(t, []string{room}, llmtest.Reply{Content: "answered in the room"})
	w.alice.WaitPresence(room + "/hermes")
	w.carol.Join(room, "Carol")

	w.alice.SayRoom(room, "chatting among ourselves")
	w.carol.SayRoom(room, "Hermes, what do you think?") // not allowed
	w.alice.SayRoom(room, "what does @hermes think?")
	got := w.alice.Wait(room, 5)
	// alice's history message, her two, carol's, then the answer.
	last := got[len(got)-1]
	if last.Body != "answered in the room" || last.From != room+"/hermes" || last.Type != "groupchat" {
		t.Fatalf("room messages %+v", got)
	}
	reqs := rig.LLM.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Raw), "what does @hermes think?") {
		t.Fatalf("%d model calls, want 1 for the mention", len(reqs))
	}
	for _, bad := range []string{"said before you came", "chatting among ourselves", "what do you think"} {
		if strings.Contains(string(reqs[0].Raw), bad) {
			t.Fatalf("the model saw %q", bad)
		}
	}
	gatewaytest.WaitFor(t, "carol's message refused", func() bool {
		return strings.Contains(gatewaytest.Payloads(t, rig.Store), `"user":"carol@localhost"`)
	})
	p := gatewaytest.Payloads(t, rig.Store)
	if !strings.Contains(p, `"user":"alice@localhost"`) {
		t.Fatalf("the room user is not alice's real JID:\n%s", p)
	}
	if n := len(w.carol.Messages(botJID)); n != 0 {
		t.Fatalf("carol got %d direct messages (a pairing code from a room?)", n)
	}
}

// A long answer arrives as several messages, each within the limit, that
// together hold the whole text in order.
func TestLongAnswerIsSplit(t *testing.T) {
	w := newWorld(t)
	var b strings.Builder
	for i := range 300 {
		b.WriteString("Sentence number ")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(" of a long answer & <more>. ")
		if i%10 == 9 {
			b.WriteString("\n\n")
		}
	}
	long := strings.TrimSpace(b.String())
	rig, _, _ := w.bot(t, nil, llmtest.Reply{Content: long})
	w.alice.Say(botJID, "tell me everything")
	parts := xmpp.Split(long, xmpp.MaxMessage)
	if len(parts) < 3 {
		t.Fatalf("the answer (%d characters) splits into %d parts", len(long), len(parts))
	}
	got := w.alice.Wait(botJID, len(parts))
	gatewaytest.WaitFor(t, "the reply recorded as delivered", func() bool {
		return gatewaytest.CountTypes(t, rig.Store, "GatewayMessageDelivered") == 1
	})
	if n := len(w.alice.Messages(botJID)); n != len(parts) {
		t.Fatalf("%d messages, want %d", n, len(parts))
	}
	var joined []string
	for i, m := range got {
		if n := len([]rune(m.Body)); n > xmpp.MaxMessage || n == 0 {
			t.Fatalf("part %d has %d characters", i, n)
		}
		joined = append(joined, m.Body)
	}
	if strings.Join(strings.Fields(strings.Join(joined, " ")), " ") != strings.Join(strings.Fields(long), " ") {
		t.Fatal("the parts do not add up to the answer")
	}
}

// When the server goes down the adapter logs in again by itself once it
// is back; an answer the model finished while the server was down is
// delivered after the reconnect, exactly once, and a new message is
// answered; the rooms are joined again.
func TestServerRestartReconnects(t *testing.T) {
	w := newWorld(t)
	rig, ad, _ := w.bot(t, []string{room},
		llmtest.Reply{Content: "answer written during the outage", Delay: 1500 * time.Millisecond},
		llmtest.Reply{Content: "answer after the restart"})
	w.alice.Say(botJID, "a slow question")
	gatewaytest.WaitFor(t, "the model call", func() bool { return len(rig.LLM.Requests()) == 1 })
	w.srv.Stop()
	gatewaytest.WaitFor(t, "the adapter to see the server gone", func() bool { return !ad.Connected() })
	gatewaytest.WaitFor(t, "a delivery attempt to fail", func() bool { return ad.failed.Load() > 0 })
	if msg, _ := ad.LastError(); !strings.Contains(msg, "xmpp") {
		t.Fatalf("the adapter does not say why it is offline: %q", msg)
	}
	w.srv.Up()
	gatewaytest.WaitFor(t, "the adapter to reconnect", func() bool { return ad.Connections() >= 2 && ad.Connected() })
	alice := w.srv.Connect("alice", "alice-pass")
	got := alice.Wait(botJID, 1)
	if got[0].Body != "answer written during the outage" {
		t.Fatalf("after the restart: %+v", got)
	}
	gatewaytest.WaitFor(t, "the reply recorded as delivered", func() bool {
		return gatewaytest.CountTypes(t, rig.Store, "GatewayMessageDelivered") == 1
	})
	alice.Say(botJID, "still there?")
	got = alice.Wait(botJID, 2)
	if got[1].Body != "answer after the restart" {
		t.Fatalf("second answer: %+v", got)
	}
	gatewaytest.WaitFor(t, "both replies recorded as delivered", func() bool {
		return gatewaytest.CountTypes(t, rig.Store, "GatewayMessageDelivered") == 2
	})
	if n := len(alice.Messages(botJID)); n != 2 {
		t.Fatalf("%d answers, want 2 (one each): %+v", n, alice.Messages(botJID))
	}
	// The room was joined again.
	alice.Join(room, "Alice")
	alice.WaitPresence(room + "/hermes")
}

// An approval question arrives as text naming the replies; another
// occupant's /approve decides nothing; the user's own /approve does.
func TestApprovalByTextReply(t *testing.T) {
	w := newWorld(t)
	w.alice.Join(room, "Alice")
	w.bob.Join(room, "Bob")
	rig, _, _ := w.bot(t, []string{room},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		llmtest.Reply{Content: "deleted"})
	w.alice.WaitPresence(room + "/hermes")
	w.alice.SayRoom(room, "hermes: clean the build dir")
	q := waitBody(t, w.alice, room, "rm -rf build")
	if !strings.Contains(q, "/approve") {
		t.Fatalf("approval question %q does not say how to answer", q)
	}
	w.bob.SayRoom(room, "/approve")
	waitBody(t, w.alice, room, "no question waiting")
	if gatewaytest.CountTypes(t, rig.Store, "ApprovalDecided") != 0 {
		t.Fatal("bob's /approve decided alice's approval")
	}
	w.alice.SayRoom(room, "/approve")
	waitBody(t, w.alice, room, "deleted")
	if !strings.Contains(gatewaytest.Payloads(t, rig.Store), `"decision":"once","by":"user"`) {
		t.Fatal("the decision is not recorded as the user's")
	}
}

func waitBody(t *testing.T, cl *xmpptest.Client, from, part string) string {
	t.Helper()
	var body string
	gatewaytest.WaitFor(t, "a message containing "+part, func() bool {
		for _, m := range cl.Messages(from) {
			if strings.Contains(m.Body, part) {
				body = m.Body
				return true
			}
		}
		return false
	})
	return body
}

// A wrong password is a permanent error: Run returns at once and the
// gateway does not retry it.
func TestBadPasswordIsPermanent(t *testing.T) {
	srv := xmpptest.Start(t)
	srv.Register("hermes", "bot-secret")
	ad, err := xmpp.New(xmpp.Config{JID: botJID, Password: "wrong", Server: srv.Addr, TLS: srv.TLS()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = ad.Run(ctx, func(context.Context, schema.Inbound) error { return nil })
	var perm *gw.PermanentError
	if !errors.As(err, &perm) || ctx.Err() != nil {
		t.Fatalf("Run: %v, want a permanent error", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Fatalf("the error quotes the password: %v", err)
	}
	if n := srv.AuthFailures(); n != 1 {
		t.Fatalf("the server refused %d logins, want 1", n)
	}
}

// A message sent while the bot was offline, which the server stored, is
// answered once the bot logs in.
func TestOfflineMessageIsAnswered(t *testing.T) {
	w := newWorld(t)
	w.alice.Say(botJID, "are you up yet?")
	rig, _, _ := w.bot(t, nil, llmtest.Reply{Content: "now I am"})
	if got := w.alice.Wait(botJID, 1); got[0].Body != "now I am" {
		t.Fatalf("answer %q", got[0].Body)
	}
	if reqs := rig.LLM.Requests(); len(reqs) != 1 || !strings.Contains(string(reqs[0].Raw), "are you up yet?") {
		t.Fatalf("%d model calls", len(reqs))
	}
}

// In a semi-anonymous room where the bot is no moderator, an occupant's
// real JID is hidden: the user is room/nick, which the allow-list of bare
// JIDs does not match, so the mention is refused (and recorded as such). In
// one the bot made (and so moderates) it sees the real JID and answers.
func TestAnonymousRoomUsesRoomNick(t *testing.T) {
	w := newWorld(t)
	anon, own := "hidden@"+xmpptest.AnonMUC, "botmade@"+xmpptest.AnonMUC
	w.alice.Join(anon, "Alice") // alice makes the room and owns it
	rig, _, _ := w.bot(t, []string{anon, own}, llmtest.Reply{Content: "I see you, alice"})
	w.alice.WaitPresence(anon + "/hermes")
	w.alice.SayRoom(anon, "hermes: who am I?")
	gatewaytest.WaitFor(t, "the refusal of room/nick", func() bool {
		return strings.Contains(gatewaytest.Payloads(t, rig.Store), `"user":"`+anon+`/Alice"`)
	})
	if n := len(rig.LLM.Requests()); n != 0 {
		t.Fatalf("the model ran for a hidden occupant (%d calls)", n)
	}
	w.alice.Join(own, "Alice") // the bot made this one: it moderates it
	w.alice.SayRoom(own, "hermes: and here?")
	// Answered: only alice's bare JID is on the allow-list, not own/Alice.
	waitBody(t, w.alice, own, "I see you, alice")
}

// A typing indicator reaches the user as a XEP-0085 "composing" state.
func TestTypingIsAChatState(t *testing.T) {
	w := newWorld(t)
	_, ad, _ := w.bot(t, nil)
	if _, err := ad.Send(context.Background(), schema.Outbound{Kind: "typing", Platform: xmpp.Platform, Chat: "alice@localhost"}); err != nil {
		t.Fatal(err)
	}
	gatewaytest.WaitFor(t, "the composing state", func() bool {
		st := w.alice.States(botJID)
		return len(st) == 1 && st[0] == "composing"
	})
}

// When someone else holds the bot's nick in a room, the bot joins as
// nick_, answers mentions of that nick, and does not answer its own
// messages.
func TestRoomNickTaken(t *testing.T) {
	w := newWorld(t)
	w.alice.Join(room, "Alice")
	w.carol.Join(room, "hermes") // carol took the bot's nick
	rig, _, _ := w.bot(t, []string{room}, llmtest.Reply{Content: "I am hermes_"})
	w.alice.WaitPresence(room + "/hermes_")
	w.alice.SayRoom(room, "hermes: that is carol, not the bot")
	w.alice.SayRoom(room, "hermes_: are you the bot?")
	got := waitBody(t, w.alice, room, "I am hermes_")
	if got != "I am hermes_" {
		t.Fatalf("answer %q", got)
	}
	if reqs := rig.LLM.Requests(); len(reqs) != 1 || strings.Contains(string(reqs[0].Raw), "that is carol") {
		t.Fatalf("%d model calls, want 1 (only the mention of hermes_)", len(reqs))
	}
}
