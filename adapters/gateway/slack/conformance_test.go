package slack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/conformance"
	"github.com/hermes-go/hermes/adapters/gateway/slack"
)

// The gateway conformance suite against the Slack adapter in Socket Mode,
// its peer slacktest (slack-go's own test server, not Slack): users' messages
// and button clicks are Socket Mode envelopes pushed over slacktest's
// WebSocket, what they receive is what the adapter posted to slacktest's
// chat.postMessage.
func TestConformance(t *testing.T) {
	conformance.Run(t, &slPeer{})
}

// slPeer starts a fresh slacktest server for each case (Users): slacktest
// keeps a WebSocket's writer alive after its connection closed, and that
// writer takes a share of the frames pushed later, so one server is not
// reused across connections from different cases.
type slPeer struct {
	mu   sync.Mutex
	cur  *peer
	next atomic.Int64
}

func (p *slPeer) Name() string { return slack.Platform }

func (p *slPeer) Caps() conformance.Caps {
	return conformance.Caps{Limit: slack.MaxMessage, Groups: true, Restart: true}
}

func (p *slPeer) Users(t testing.TB) conformance.Users {
	sp := startPeer(t)
	p.mu.Lock()
	p.cur = sp
	p.mu.Unlock()
	n := p.next.Add(1)
	group := fmt.Sprintf("C0TEAM%03d", n)
	user := func(name string) conformance.User {
		id := fmt.Sprintf("U%s%03d", strings.ToUpper(name), n)
		return &slUser{p: sp, id: id, dm: "D" + id[1:], group: group}
	}
	return conformance.Users{Alice: user("alice"), Bob: user("bob"), Stranger: user("mallory")}
}

func (p *slPeer) NewPlatform(t testing.TB) gw.Platform {
	p.mu.Lock()
	sp := p.cur
	p.mu.Unlock()
	ad, err := slack.New(slack.Config{BotToken: botToken, AppToken: appToken, APIURL: sp.url(), HTTPClient: sp.client(),
		PingInterval: time.Hour, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	return ad
}

func (p *slPeer) Mention(text string) string { return "<@" + botID + "> " + text }

// Restart plays Slack going away and coming back as an app sees it:
// slacktest cannot be started again at the same address, so Slack's own
// signal is sent instead — the documented Socket Mode `disconnect` frame
// (reason refresh_requested), which Slack sends before it drops a
// connection — and for a moment every request to the Web API is refused
// (a fault injected in the test's HTTP transport, as a network outage).
// The adapter must open a new Socket Mode connection, and a reply it was
// sending must still arrive once.
func (p *slPeer) Restart(t testing.TB) {
	p.mu.Lock()
	sp := p.cur
	p.mu.Unlock()
	before := sp.rec.opens.Load()
	sp.rec.down.Store(true)
	sp.srv.SendToWebsocket(`{"type":"disconnect","reason":"refresh_requested","debug_info":{"host":"slacktest"}}`)
	time.Sleep(time.Second) // the outage: requests meanwhile are refused
	sp.rec.down.Store(false)
	deadline := time.Now().Add(conformance.Wait)
	for sp.rec.opens.Load() == before {
		if time.Now().After(deadline) {
			t.Fatal("the adapter did not open a new Socket Mode connection after Slack's disconnect")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// slUser acts as a Slack client of slacktest would make Slack act.
type slUser struct {
	p         *peer
	id, dm    string
	group     string
	envelopes atomic.Int64
}

func (u *slUser) ID() string { return u.id }

func (u *slUser) chat(where conformance.Where) string {
	if where == conformance.Group {
		return u.group
	}
	return u.dm
}

// Send delivers the message event Slack sends for what the user typed (with
// &, < and > escaped, as Slack does, the bot's mention kept as <@id>).
func (u *slUser) Send(ctx context.Context, where conformance.Where, text string) error {
	mention := "<@" + botID + "> "
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	if rest, ok := strings.CutPrefix(text, mention); ok {
		text = mention + esc.Replace(rest)
	} else {
		text = esc.Replace(text)
	}
	typ := "im"
	if where == conformance.Group {
		typ = "channel"
	}
	return u.deliver(ctx, "events_api", messageEvent(u.id, u.chat(where), typ, text, u.p.ts(), ""))
}

// deliver pushes an envelope and, as Slack does, pushes it again until the
// app acknowledges it.
func (u *slUser) deliver(ctx context.Context, typ string, payload any) error {
	id := fmt.Sprintf("env-%s-%d", u.id, u.envelopes.Add(1))
	raw, err := json.Marshal(map[string]any{"envelope_id": id, "type": typ, "accepts_response_payload": typ != "events_api", "payload": payload})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(conformance.Wait)
	for time.Now().Before(deadline) {
		u.p.srv.SendToWebsocket(string(raw))
		again := time.Now().Add(2 * time.Second)
		for time.Now().Before(again) {
			if u.p.acked(id) {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return fmt.Errorf("envelope %s was never acknowledged", id)
}

// Received renders what the bot posted to the chat as a Slack client shows
// it: entities decoded, links as their text. Size counts the characters of
// the text as posted, the unit of MaxMessage.
func (u *slUser) Received(_ context.Context, where conformance.Where) ([]conformance.Message, error) {
	var out []conformance.Message
	for i, q := range u.p.rec.posts() {
		if q.Channel != u.chat(where) || !q.OK {
			continue
		}
		m := conformance.Message{Text: render(q.Text), Size: utf8.RuneCountInString(q.Text), ID: strconv.Itoa(i)}
		if q.Blocks != "" {
			_, m.Choices = buttonsOf(q)
		}
		out = append(out, m)
	}
	return out, nil
}

// render turns mrkdwn's links into their text and decodes its entities.
func render(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "<")
		if i < 0 {
			break
		}
		j := strings.Index(s[i:], ">")
		if j < 0 {
			break
		}
		inner := s[i+1 : i+j]
		if _, label, ok := strings.Cut(inner, "|"); ok {
			inner = label
		}
		b.WriteString(s[:i] + inner)
		s = s[i+j+1:]
	}
	b.WriteString(s)
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(b.String())
}

// Answer clicks the question's button for choice.
func (u *slUser) Answer(ctx context.Context, where conformance.Where, q conformance.Message, choice string) error {
	i, err := strconv.Atoi(q.ID)
	ps := u.p.rec.posts()
	if err != nil || i >= len(ps) {
		return fmt.Errorf("no such message %q", q.ID)
	}
	blockID, values := buttonsOf(ps[i])
	data := "approval:" + choice
	for _, v := range values {
		if v == data {
			return u.deliver(ctx, "interactive", click(u.id, u.chat(where), blockID, data))
		}
	}
	return u.Send(ctx, where, "/approve")
}

// buttonsOf reads a post's approval buttons ("" and nil when it has none).
func buttonsOf(q post) (string, []string) {
	if q.Blocks == "" {
		return "", nil
	}
	var raw []struct {
		Type     string `json:"type"`
		BlockID  string `json:"block_id"`
		Elements []struct {
			Value string `json:"value"`
		} `json:"elements"`
	}
	if json.Unmarshal([]byte(q.Blocks), &raw) != nil {
		return "", nil
	}
	for _, b := range raw {
		if b.Type != "actions" {
			continue
		}
		var values []string
		for _, e := range b.Elements {
			values = append(values, e.Value)
		}
		return b.BlockID, values
	}
	return "", nil
}
