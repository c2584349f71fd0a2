package slack_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"
	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slacktest"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/tool"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/gateway/slack"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
	"github.com/hermes-go/hermes/schema"
)

// setup is the whole gateway (gatewaytest's rig: store, router, sessions,
// scripted model) with the Slack adapter served on it, talking to p.
type setup struct {
	rig *gatewaytest.Rig
	ad  *slack.Adapter
	// events is the Events API endpoint's base URL (Events API mode).
	events string
}

type mode int

const (
	socketMode mode = iota
	eventsAPI
)

func start(t *testing.T, p *peer, m mode, script ...llmtest.Reply) *setup {
	t.Helper()
	rig := gatewaytest.Start(t, gatewaytest.Options{Script: script,
		Config: gateway.Config{Auth: gateway.Auth{Pairing: true, Platform: map[string][]string{"slack": {alice}}}, TypingEvery: time.Hour},
		Tools:  []tool.Tool{gatewaytest.ApprovalTool(&terminal.Approver{Timeout: 20 * time.Second})}})
	cfg := slack.Config{BotToken: botToken, APIURL: p.url(), HTTPClient: p.client(), PingInterval: time.Hour, Log: zerolog.Nop()}
	if m == socketMode {
		cfg.AppToken = appToken
	} else {
		cfg.SigningSecret, cfg.EventsListen = secret, "127.0.0.1:0"
	}
	ad, err := slack.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	served := rig.Serve(ad, nil)
	gatewaytest.WaitFor(t, "the adapter to connect", func() bool {
		if st := served.Status(); st.LastError != "" {
			t.Logf("adapter: %s", st.LastError)
		}
		return ad.Connected()
	})
	s := &setup{rig: rig, ad: ad}
	if m == eventsAPI {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.events = "http://" + ad.EventsAddr(ctx).String()
	}
	return s
}

func (s *setup) count(t *testing.T, typ string) int {
	return gatewaytest.CountTypes(t, s.rig.Store, typ)
}

// An allowed user's direct message, pushed over Socket Mode, reaches the
// agent; the answer is posted to the DM as mrkdwn, at top level (a
// top-level DM is its own chat), and the envelope is acknowledged.
func TestSocketModeAnswersAllowedUser(t *testing.T) {
	p := startPeer(t)
	s := start(t, p, socketMode, llmtest.Reply{Content: "**Paris** is the capital <of France> & [more](https://fr.example)."})
	env := p.envelope("events_api", messageEvent(alice, dm, "im", "capital of France?", p.ts(), ""))
	got := p.rec.waitPosts(t, dm, 1)[0]
	if got.Text != "*Paris* is the capital &lt;of France&gt; &amp; <https://fr.example|more>." || got.ThreadTS != "" || !got.OK {
		t.Fatalf("answer %+v", got)
	}
	gatewaytest.WaitFor(t, "the envelope acknowledged", func() bool { return p.acked(env) })
	// An event type this build does not know is acknowledged (Slack would
	// send it again) and starts nothing.
	future := p.envelope("events_api", callback(map[string]any{"type": "some_future_event", "user": alice, "channel": dm}))
	gatewaytest.WaitFor(t, "the unknown event acknowledged", func() bool { return p.acked(future) })
	gatewaytest.WaitFor(t, "the reply recorded as delivered", func() bool { return s.count(t, "GatewayMessageDelivered") == 1 })
	if strings.Contains(gatewaytest.Payloads(t, s.rig.Store), "xoxb-") || strings.Contains(gatewaytest.Payloads(t, s.rig.Store), "xapp-") {
		t.Fatal("a token is in the events")
	}
}

// Someone not on the allow-list gets a pairing code in their DM and never
// reaches the model; the bot's own posts and edits start nothing.
func TestSocketModeUnknownUserGetsPairingCode(t *testing.T) {
	p := startPeer(t)
	s := start(t, p, socketMode)
	// Echoes of the bot's own post and an edit are not messages for it.
	own := messageEvent(botID, "D0BOB0001", "im", "my own post", p.ts(), "")
	p.envelope("events_api", own)
	edit := messageEvent(bob, "D0BOB0001", "im", "edited", p.ts(), "")
	edit["event"].(map[string]any)["subtype"] = "message_changed"
	p.envelope("events_api", edit)
	p.envelope("events_api", messageEvent(bob, "D0BOB0001", "im", "hello?", p.ts(), ""))
	got := p.rec.waitPosts(t, "D0BOB0001", 1)
	if !strings.Contains(got[0].Text, "pairing code") || !strings.Contains(got[0].Text, "hermes pairing approve") {
		t.Fatalf("notice %q", got[0].Text)
	}
	gatewaytest.WaitFor(t, "the refusal recorded", func() bool { return s.count(t, "GatewayInboundRefused") == 1 })
	if n := len(s.rig.LLM.Requests()); n != 0 {
		t.Fatalf("the model was asked %d times", n)
	}
	if ps := p.rec.to("D0BOB0001"); len(ps) != 1 {
		t.Fatalf("posts %+v", ps)
	}
}

// Threads are sessions: each top-level mention in a channel opens a thread
// answered in the thread, with a session of its own; a follow-up in the
// bot's thread needs no mention and continues that thread's session.
func TestThreadsAreSessions(t *testing.T) {
	p := startPeer(t)
	s := start(t, p, socketMode, llmtest.Reply{Content: "one"}, llmtest.Reply{Content: "two"}, llmtest.Reply{Content: "three"})
	t1 := p.ts()
	p.envelope("events_api", mentionEvent(alice, channel, "first topic", t1, ""))
	if got := p.rec.waitPosts(t, channel, 1)[0]; got.Text != "one" || got.ThreadTS != t1 {
		t.Fatalf("first answer %+v, want in thread %s", got, t1)
	}
	t2 := p.ts()
	p.envelope("events_api", mentionEvent(alice, channel, "second topic", t2, ""))
	if got := p.rec.waitPosts(t, channel, 2)[1]; got.Text != "two" || got.ThreadTS != t2 {
		t.Fatalf("second answer %+v, want in thread %s", got, t2)
	}
	// A channel message naming nobody, outside the bot's threads: not for it.
	p.envelope("events_api", messageEvent(alice, channel, "channel", "lunch?", p.ts(), ""))
	// In the first thread, without a mention.
	p.envelope("events_api", messageEvent(alice, channel, "channel", "and more on that", p.ts(), t1))
	if got := p.rec.waitPosts(t, channel, 3)[2]; got.Text != "three" || got.ThreadTS != t1 {
		t.Fatalf("follow-up answer %+v, want in thread %s", got, t1)
	}
	if n := s.count(t, "SessionStarted"); n != 2 {
		t.Fatalf("%d sessions, want one per thread", n)
	}
	reqs := s.rig.LLM.Requests()
	last := string(reqs[len(reqs)-1].Raw)
	if !strings.Contains(last, "first topic") || strings.Contains(last, "second topic") {
		t.Fatalf("the follow-up's history is not its thread's: %s", last)
	}
	if ps := p.rec.to(channel); len(ps) != 3 {
		t.Fatalf("posts %+v", ps)
	}
}

// Over Socket Mode, /hermes is a prompt for the channel's session of the
// user, answered in the channel; without text its ack carries a usage hint
// shown only to the user. A reply in a thread of the DM is a session apart
// from the DM's, answered in that thread.
func TestSocketModeSlashCommandAndDMThreads(t *testing.T) {
	p := startPeer(t)
	s := start(t, p, socketMode, llmtest.Reply{Content: "42"}, llmtest.Reply{Content: "top"}, llmtest.Reply{Content: "threaded"})
	cmd := map[string]any{"token": "x", "team_id": "T024BE7LD", "channel_id": channel, "channel_name": "general", "user_id": alice,
		"user_name": "alice", "command": "/hermes", "text": "what is the answer?", "trigger_id": "1.2.3", "response_url": "https://hooks.slack.com/commands/1/2"}
	env := p.envelope("slash_commands", cmd)
	if got := p.rec.waitPosts(t, channel, 1)[0]; got.Text != "42" || got.ThreadTS != "" {
		t.Fatalf("answer %+v", got)
	}
	gatewaytest.WaitFor(t, "the command acknowledged", func() bool { return p.acked(env) })
	cmd["text"], cmd["trigger_id"] = "", "1.2.4"
	env = p.envelope("slash_commands", cmd)
	gatewaytest.WaitFor(t, "the empty command acknowledged", func() bool { return p.acked(env) })
	if a := p.ack(env); !strings.Contains(a, `"response_type":"ephemeral"`) || !strings.Contains(a, "Usage: /hermes") {
		t.Fatalf("ack %s", a)
	}

	top := p.ts()
	p.envelope("events_api", messageEvent(alice, dm, "im", "at the top", top, ""))
	if got := p.rec.waitPosts(t, dm, 1)[0]; got.Text != "top" || got.ThreadTS != "" {
		t.Fatalf("top-level DM answer %+v", got)
	}
	p.envelope("events_api", messageEvent(alice, dm, "im", "in a thread", p.ts(), top))
	if got := p.rec.waitPosts(t, dm, 2)[1]; got.Text != "threaded" || got.ThreadTS != top {
		t.Fatalf("DM thread answer %+v, want in thread %s", got, top)
	}
	if n := s.count(t, "SessionStarted"); n != 3 {
		t.Fatalf("%d sessions, want 3 (the channel's for alice, the DM's, the DM thread's)", n)
	}
}

// A long answer arrives as several posts in the thread, each within
// MaxMessage characters, with nothing lost.
func TestLongAnswerIsSplit(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 300; i++ {
		b.WriteString("This sentence is part of a long answer that Slack gets in parts. ")
		if i%10 == 9 {
			b.WriteString("\n\n")
		}
	}
	long := strings.TrimSpace(b.String())
	p := startPeer(t)
	start(t, p, socketMode, llmtest.Reply{Content: long})
	t1 := p.ts()
	p.envelope("events_api", mentionEvent(alice, channel, "tell me everything", t1, ""))
	want := (utf8.RuneCountInString(long) + slack.MaxMessage - 1) / slack.MaxMessage
	ps := p.rec.waitPosts(t, channel, want)
	gatewaytest.WaitFor(t, "all parts", func() bool {
		return strings.Count(strings.Join(textsOf(p.rec.to(channel)), " "), "This sentence") == 300
	})
	ps = p.rec.to(channel)
	for i, q := range ps {
		if n := utf8.RuneCountInString(q.Text); n > slack.MaxMessage || q.ThreadTS != t1 {
			t.Fatalf("part %d: %d characters in thread %q", i, n, q.ThreadTS)
		}
	}
}

func textsOf(ps []post) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Text)
	}
	return out
}

// A dangerous command's approval is posted with Block Kit buttons; another
// user's click is refused and decides nothing; the session's user's click
// answers it, and the turn goes on.
func TestSocketModeApprovalButtons(t *testing.T) {
	p := startPeer(t)
	s := start(t, p, socketMode,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		llmtest.Reply{Content: "deleted"})
	p.envelope("events_api", messageEvent(alice, dm, "im", "clean the build dir", p.ts(), ""))
	q := p.rec.waitPosts(t, dm, 1)[0]
	blockID, values := approvalButtons(t, q)
	if !strings.Contains(q.Text, "rm -rf build") || values[0] != "approval:once" || !strings.HasSuffix(blockID, "slack/"+dm) {
		t.Fatalf("approval %q, block %q, buttons %v", q.Text, blockID, values)
	}
	env := p.envelope("interactive", click(bob, dm, blockID, "approval:once"))
	gatewaytest.WaitFor(t, "the stranger's click refused", func() bool {
		return strings.Contains(gatewaytest.Payloads(t, s.rig.Store), "approval answered by someone other than the session's user")
	})
	gatewaytest.WaitFor(t, "the click acknowledged", func() bool { return p.acked(env) })
	if s.count(t, "ApprovalDecided") != 0 {
		t.Fatal("someone else's click decided the approval")
	}
	p.envelope("interactive", click(alice, dm, blockID, "approval:once"))
	if got := p.rec.waitPosts(t, dm, 2)[1]; got.Text != "deleted" {
		t.Fatalf("after the click: %+v", got)
	}
	if !strings.Contains(gatewaytest.Payloads(t, s.rig.Store), `"decision":"once","by":"user"`) {
		t.Fatal("the decision is not recorded as the user's")
	}
}

// approvalButtons reads an approval post's actions block.
func approvalButtons(t *testing.T, q post) (string, []string) {
	t.Helper()
	for _, b := range blocks(t, q).BlockSet {
		if a, ok := b.(*slackapi.ActionBlock); ok {
			var values []string
			for _, e := range a.Elements.ElementSet {
				if btn, ok := e.(*slackapi.ButtonBlockElement); ok {
					values = append(values, btn.Value)
				}
			}
			if len(values) > 0 {
				return a.BlockID, values
			}
		}
	}
	t.Fatalf("no buttons in %q", q.Blocks)
	return "", nil
}

// The Events API endpoint: url_verification is answered with its
// challenge; requests with a wrong or stale signature are refused; a signed
// message event is answered; the endpoint's 200 comes after the router
// recorded the message.
func TestEventsAPISignedRequests(t *testing.T) {
	p := startPeer(t)
	s := start(t, p, eventsAPI, llmtest.Reply{Content: "pong"})
	ep := s.events + slack.EventsPath

	resp := signedJSON(t, ep, map[string]any{"token": "x", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", "type": "url_verification"})
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
		t.Fatalf("challenge: %d %q", resp.StatusCode, body)
	}

	resp = signedJSON(t, ep, callback(map[string]any{"type": "some_future_event", "user": alice}))
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("an event type this build does not know: status %d, want 200 (or Slack sends it again)", resp.StatusCode)
	}
	resp = signed(t, ep, "application/json", []byte(`{"type":`), secret, time.Now())
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("not JSON: status %d", resp.StatusCode)
	}

	msg, _ := json.Marshal(messageEvent(alice, dm, "im", "ping", p.ts(), ""))
	for name, r := range map[string]*http.Response{
		"wrong secret": signed(t, ep, "application/json", msg, "not-the-secret", time.Now()),
		"stale":        signed(t, ep, "application/json", msg, secret, time.Now().Add(-6*time.Minute)),
	} {
		r.Body.Close()
		if r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s: status %d", name, r.StatusCode)
		}
	}
	unsigned, err := http.Post(ep, "application/json", strings.NewReader(string(msg)))
	if err != nil {
		t.Fatal(err)
	}
	unsigned.Body.Close()
	if unsigned.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unsigned: status %d", unsigned.StatusCode)
	}
	if n := s.count(t, "GatewayMessageReceived"); n != 0 {
		t.Fatalf("%d messages recorded from refused requests", n)
	}

	resp = signed(t, ep, "application/json", msg, secret, time.Now())
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("signed event: status %d", resp.StatusCode)
	}
	if s.count(t, "GatewayMessageReceived") != 1 {
		t.Fatal("the 200 came before the message was recorded")
	}
	if got := p.rec.waitPosts(t, dm, 1)[0]; got.Text != "pong" {
		t.Fatalf("answer %+v", got)
	}
	// Slack retries a delivery it thinks failed: the same message is not
	// answered twice.
	resp = signed(t, ep, "application/json", msg, secret, time.Now())
	resp.Body.Close()
	gatewaytest.WaitFor(t, "the reply delivered", func() bool { return s.count(t, "GatewayMessageDelivered") == 1 })
	if n := len(s.rig.LLM.Requests()); n != 1 {
		t.Fatalf("the model was asked %d times", n)
	}
}

// /hermes, signed as Slack sends slash commands, is a prompt for the
// session of that channel and user; the answer is posted to the channel.
// Without text it gets a usage hint, shown only to the user.
func TestSlashCommand(t *testing.T) {
	p := startPeer(t)
	s := start(t, p, eventsAPI, llmtest.Reply{Content: "42"})
	ep := s.events + slack.CommandsPath
	form := url.Values{"token": {"x"}, "team_id": {"T024BE7LD"}, "channel_id": {channel}, "channel_name": {"general"},
		"user_id": {alice}, "user_name": {"alice"}, "command": {"/hermes"}, "text": {"what is the answer?"},
		"response_url": {"https://hooks.slack.com/commands/1234/5678"}, "trigger_id": {"13345224609.738474920.8088930838d88f008e0"}}
	resp := signedForm(t, ep, form)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := p.rec.waitPosts(t, channel, 1)[0]; got.Text != "42" || got.ThreadTS != "" {
		t.Fatalf("answer %+v", got)
	}
	if !strings.Contains(string(s.rig.LLM.Requests()[0].Raw), "what is the answer?") {
		t.Fatal("the command's text did not reach the model")
	}
	form.Set("text", " ")
	form.Set("trigger_id", "2")
	resp = signedForm(t, ep, form)
	var eph struct {
		ResponseType string `json:"response_type"`
		Text         string `json:"text"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&eph)
	resp.Body.Close()
	if resp.StatusCode != 200 || eph.ResponseType != "ephemeral" || !strings.Contains(eph.Text, "Usage: /hermes") {
		t.Fatalf("empty command: %d %+v", resp.StatusCode, eph)
	}
	// Signed with another secret: refused.
	bad := signed(t, ep, "application/x-www-form-urlencoded", []byte(form.Encode()), "wrong", time.Now())
	bad.Body.Close()
	if bad.StatusCode != http.StatusUnauthorized {
		t.Fatalf("badly signed command: %d", bad.StatusCode)
	}
}

// Approvals over the Events API: the click arrives as a signed
// interactivity payload; a click naming another conversation's chat is
// ignored, and the owner's answers.
func TestEventsAPIApprovalClick(t *testing.T) {
	p := startPeer(t)
	s := start(t, p, eventsAPI,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		llmtest.Reply{Content: "deleted"})
	resp := signedJSON(t, s.events+slack.EventsPath, messageEvent(alice, dm, "im", "clean up", p.ts(), ""))
	resp.Body.Close()
	q := p.rec.waitPosts(t, dm, 1)[0]
	blockID, _ := approvalButtons(t, q)
	payload := func(user, ch, value string) url.Values {
		raw, _ := json.Marshal(click(user, ch, blockID, value))
		return url.Values{"payload": {string(raw)}}
	}
	// The same button data replayed from another channel decides nothing.
	resp = signedForm(t, s.events+slack.InteractivePath, payload(alice, "C0OTHER", "approval:once"))
	resp.Body.Close()
	resp = signedForm(t, s.events+slack.InteractivePath, payload(alice, dm, "approval:deny"))
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := p.rec.waitPosts(t, dm, 2)[1]; got.Text != "deleted" {
		t.Fatalf("after the click: %+v", got)
	}
	if !strings.Contains(gatewaytest.Payloads(t, s.rig.Store), `"decision":"deny","by":"user"`) {
		t.Fatal("the denial is not recorded as the user's")
	}
}

// HTTP 429 with Retry-After becomes a *gw.RetryAfterError; a refusal no
// retry changes (channel_not_found) a *gw.PermanentError; a part posted
// before a failure is not posted again. The failing answers come from
// slacktest's own customisation hook (a Binder).
func TestSendErrors(t *testing.T) {
	var fails, posted int
	p := startPeer(t, func(c slacktest.Customize) {
		c.Handle("/chat.postMessage", func(w http.ResponseWriter, r *http.Request) {
			_ = r.ParseForm()
			switch r.Form.Get("channel") {
			case "CBUSY":
				w.Header().Set("Retry-After", "7")
				w.WriteHeader(http.StatusTooManyRequests)
			case "CGONE":
				_, _ = io.WriteString(w, `{"ok":false,"error":"channel_not_found"}`)
			default:
				if strings.Contains(r.Form.Get("text"), "third") && fails == 0 {
					fails++
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(http.StatusTooManyRequests)
					return
				}
				posted++
				_, _ = fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":"1700000000.%06d"}`, r.Form.Get("channel"), posted)
			}
		})
	})
	ad, err := slack.New(slack.Config{BotToken: botToken, AppToken: appToken, APIURL: p.url(), HTTPClient: p.client()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = ad.Send(ctx, schema.Outbound{Kind: "reply", Chat: "CBUSY", Text: "hi"})
	var ra *gw.RetryAfterError
	if !errors.As(err, &ra) || ra.After != 7*time.Second {
		t.Fatalf("429: %v", err)
	}
	_, err = ad.Send(ctx, schema.Outbound{Kind: "reply", Chat: "CGONE", Text: "hi"})
	var perm *gw.PermanentError
	if !errors.As(err, &perm) || !strings.Contains(err.Error(), "channel_not_found") {
		t.Fatalf("channel_not_found: %v", err)
	}
	_, err = ad.Send(ctx, schema.Outbound{Kind: "reply", Chat: "C1", Text: " "})
	if !errors.As(err, &perm) {
		t.Fatalf("empty text: %v", err)
	}
	// Three parts; the third is rate-limited once: the retry posts only it.
	text := strings.Repeat("first ", 450) + "\n\n" + strings.Repeat("second ", 450) + "\n\n" + "third"
	out := schema.Outbound{Kind: "reply", Chat: "C1", ReplyID: "r1", Text: text}
	if _, err := ad.Send(ctx, out); !errors.As(err, &ra) {
		t.Fatalf("first try: %v", err)
	}
	ids, err := ad.Send(ctx, out)
	if err != nil || len(ids) != 3 {
		t.Fatalf("retry: %v %v", ids, err)
	}
	var firsts int
	for _, q := range p.rec.to("C1") {
		if strings.HasPrefix(q.Text, "first") {
			firsts++
		}
	}
	if firsts != 1 {
		t.Fatalf("the first part was posted %d times", firsts)
	}
}

// A token Slack refuses is a *gw.PermanentError from Run, naming the
// setting to fix and not the token; Served does not retry it.
func TestBadTokenIsPermanent(t *testing.T) {
	p := startPeer(t, func(c slacktest.Customize) {
		c.Handle("/auth.test", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"ok":false,"error":"invalid_auth"}`)
		})
	})
	ad, err := slack.New(slack.Config{BotToken: botToken, AppToken: appToken, APIURL: p.url(), HTTPClient: p.client()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = ad.Run(ctx, func(context.Context, schema.Inbound) error { return nil })
	var perm *gw.PermanentError
	if !errors.As(err, &perm) || !strings.Contains(err.Error(), "invalid_auth") || !strings.Contains(err.Error(), "SLACK_BOT_TOKEN") {
		t.Fatalf("run: %v", err)
	}
	if strings.Contains(err.Error(), botToken) {
		t.Fatal("the error holds the token")
	}
	if ad.Connected() {
		t.Fatal("connected with a refused token")
	}
}

// An app-level token Slack refuses (apps.connections.open) is a
// *gw.PermanentError naming SLACK_APP_TOKEN.
func TestBadAppTokenIsPermanent(t *testing.T) {
	p := startPeer(t, func(c slacktest.Customize) {
		c.Handle("/apps.connections.open", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"ok":false,"error":"invalid_auth"}`)
		})
	})
	ad, err := slack.New(slack.Config{BotToken: botToken, AppToken: appToken, APIURL: p.url(), HTTPClient: p.client()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = ad.Run(ctx, func(context.Context, schema.Inbound) error { return nil })
	var perm *gw.PermanentError
	if !errors.As(err, &perm) || !strings.Contains(err.Error(), "SLACK_APP_TOKEN") || strings.Contains(err.Error(), appToken) {
		t.Fatalf("run: %v", err)
	}
}

func TestNewChecksConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  slack.Config
		want string
	}{
		{"no bot token", slack.Config{AppToken: appToken}, "SLACK_BOT_TOKEN"},
		{"no way in", slack.Config{BotToken: botToken}, "app_token"},
		{"events without secret", slack.Config{BotToken: botToken, EventsListen: "127.0.0.1:0"}, "SLACK_SIGNING_SECRET"},
		{"bot token as app token", slack.Config{BotToken: botToken, AppToken: botToken}, "xapp-"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := slack.New(c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error naming %s", err, c.want)
			}
			if strings.Contains(err.Error(), botToken) {
				t.Fatal("the error holds the token")
			}
		})
	}
}
