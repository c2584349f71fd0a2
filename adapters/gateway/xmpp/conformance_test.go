package xmpp_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/conformance"
	"github.com/hermes-go/hermes/adapters/gateway/xmpp"
	"github.com/hermes-go/hermes/adapters/gateway/xmpp/xmpptest"
)

// The gateway conformance suite against the XMPP adapter on a real
// Prosody, its users real XMPP client connections.
func TestConformance(t *testing.T) {
	srv := xmpptest.Start(t)
	srv.Register("hermes", "bot-secret")
	conformance.Run(t, &xmppPeer{srv: srv})
}

// xmppPeer is Prosody with fresh accounts and a fresh room for each case.
type xmppPeer struct {
	srv *xmpptest.Server

	mu      sync.Mutex
	n       int
	room    string
	clients []*xmpptest.Client
}

func (p *xmppPeer) Name() string { return xmpp.Platform }

func (p *xmppPeer) Caps() conformance.Caps {
	return conformance.Caps{Limit: xmpp.MaxMessage, Groups: true, Restart: true}
}

// Users are aliceN, bobN and strangerN, each in room confN (made by
// alice, who joins first).
func (p *xmppPeer) Users(t testing.TB) conformance.Users {
	p.mu.Lock()
	p.n++
	n := p.n
	p.room = fmt.Sprintf("conf%d@%s", n, xmpptest.MUC)
	room := p.room
	p.mu.Unlock()
	mk := func(name string) *xmppUser {
		user := fmt.Sprintf("%s%d", name, n)
		p.srv.Register(user, user+"-pass")
		c := p.srv.Connect(user, user+"-pass")
		c.Join(room, name)
		return &xmppUser{c: c, room: room}
	}
	a, b, s := mk("alice"), mk("bob"), mk("stranger")
	p.mu.Lock()
	p.clients = []*xmpptest.Client{a.c, b.c, s.c}
	p.mu.Unlock()
	return conformance.Users{Alice: a, Bob: b, Stranger: s}
}

func (p *xmppPeer) NewPlatform(t testing.TB) gw.Platform {
	p.mu.Lock()
	room := p.room
	p.mu.Unlock()
	ad, err := xmpp.New(xmpp.Config{JID: botJID, Password: "bot-secret", Server: p.srv.Addr, Rooms: []string{room},
		TLS: p.srv.TLS(), MaxBackoff: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return ad
}

func (p *xmppPeer) Mention(text string) string { return "hermes: " + text }

// Restart stops Prosody, starts it again on the same port, and logs the
// users in again (into their room).
func (p *xmppPeer) Restart(t testing.TB) {
	p.srv.Restart()
	p.mu.Lock()
	cs := p.clients
	p.mu.Unlock()
	for _, c := range cs {
		if err := c.Reconnect(); err != nil {
			t.Fatal(err)
		}
	}
}

type xmppUser struct {
	c    *xmpptest.Client
	room string
}

func (u *xmppUser) ID() string { return u.c.JID }

func (u *xmppUser) Send(_ context.Context, where conformance.Where, text string) error {
	if where == conformance.Group {
		return u.c.Send(u.room, "groupchat", text)
	}
	return u.c.Send(botJID, "chat", text)
}

// Received returns the bot's chat messages (those the server kept while
// the user was away too), or the bot's live messages in the room (not the
// history a rejoin replays).
func (u *xmppUser) Received(_ context.Context, where conformance.Where) ([]conformance.Message, error) {
	var out []conformance.Message
	if where == conformance.Group {
		for _, m := range u.c.Messages(u.room) {
			if m.From == u.room+"/hermes" && !m.Delayed {
				out = append(out, conformance.Message{Text: m.Body, ID: m.ID})
			}
		}
		return out, nil
	}
	for _, m := range u.c.Messages(botJID) {
		if m.Type == "chat" || m.Type == "" || m.Type == "normal" {
			out = append(out, conformance.Message{Text: m.Body, ID: m.ID})
		}
	}
	return out, nil
}

// Answer replies as a person does: "/approve" (a /command is addressed to
// the bot in a room without naming it).
func (u *xmppUser) Answer(ctx context.Context, where conformance.Where, _ conformance.Message, choice string) error {
	text := "/approve " + choice
	switch choice {
	case "once":
		text = "/approve"
	case "deny":
		text = "/deny"
	}
	return u.Send(ctx, where, strings.TrimSpace(text))
}
