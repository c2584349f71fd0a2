package matrix_test

import (
	"context"
	"fmt"
	"html"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/rs/zerolog"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/conformance"
	"github.com/hermes-go/hermes/adapters/gateway/matrix"
	"github.com/hermes-go/hermes/adapters/gateway/matrix/matrixtest"
)

// The gateway conformance suite against the Matrix adapter talking to a
// real Dendrite homeserver.
func TestConformance(t *testing.T) {
	srv := matrixtest.Start(t)
	conformance.Run(t, &mxPeer{srv: srv, bot: srv.Register(t, "hermes")})
}

// mxPeer is a Dendrite with a bot account and, per case, fresh users with
// direct chats with the bot and a group of them all. The rooms are set up
// with the bot's own client (as if it had accepted the invites), so every
// case starts with the rooms in place; the adapter's answering of invites
// has tests of its own.
type mxPeer struct {
	srv  *matrixtest.Server
	bot  *matrixtest.User
	next atomic.Int64

	mu    sync.Mutex
	state string // the case's state directory (the sync token)
}

func (p *mxPeer) Name() string { return matrix.Platform }

func (p *mxPeer) Caps() conformance.Caps {
	return conformance.Caps{Limit: matrix.MaxMessage, Groups: true, Restart: true}
}

func (p *mxPeer) Users(t testing.TB) conformance.Users {
	n := p.next.Add(1)
	mk := func(name string) *mxUser {
		u := p.srv.Register(t, fmt.Sprintf("%s%d", name, n))
		dm := u.DM(t, p.bot.ID)
		p.bot.Join(t, dm)
		return &mxUser{u: u, bot: p.bot.ID, dm: dm}
	}
	alice, bob, stranger := mk("alice"), mk("bob"), mk("mallory")
	group := alice.u.Group(t, fmt.Sprintf("team %d", n), bob.u.ID, stranger.u.ID, p.bot.ID)
	for _, u := range []*matrixtest.User{bob.u, stranger.u, p.bot} {
		u.Join(t, group)
	}
	for _, u := range []*mxUser{alice, bob, stranger} {
		u.group = group
	}
	p.mu.Lock()
	p.state = t.TempDir()
	p.mu.Unlock()
	return conformance.Users{Alice: alice, Bob: bob, Stranger: stranger}
}

func (p *mxPeer) NewPlatform(t testing.TB) gw.Platform {
	p.mu.Lock()
	state := p.state
	p.mu.Unlock()
	ad, err := matrix.New(matrix.Config{Homeserver: p.srv.URL, UserID: string(p.bot.ID), AccessToken: p.bot.Token,
		StateDir: state, SyncTimeout: 2 * time.Second, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	return ad
}

// Mention addresses the bot as a Matrix client's pill does in the plain
// body: "name: text".
func (p *mxPeer) Mention(text string) string { return p.bot.ID.Localpart() + ": " + text }

func (p *mxPeer) Restart(t testing.TB) { p.srv.Restart(t) }

type mxUser struct {
	u         *matrixtest.User
	bot       id.UserID
	dm, group id.RoomID
}

func (u *mxUser) ID() string { return string(u.u.ID) }

func (u *mxUser) room(where conformance.Where) id.RoomID {
	if where == conformance.Group {
		return u.group
	}
	return u.dm
}

func (u *mxUser) Send(ctx context.Context, where conformance.Where, text string) error {
	_, err := u.u.Client.SendMessageEvent(ctx, u.room(where), event.EventMessage, &event.MessageEventContent{MsgType: event.MsgText, Body: text})
	return err
}

// Received renders the bot's messages as a Matrix client shows them: the
// HTML of formatted_body with its tags gone, or the plain body.
func (u *mxUser) Received(ctx context.Context, where conformance.Where) ([]conformance.Message, error) {
	evs, err := u.u.From(ctx, u.room(where), u.bot)
	if err != nil {
		return nil, err
	}
	out := make([]conformance.Message, 0, len(evs))
	for _, ev := range evs {
		text := shown(ev.Content.AsMessage())
		out = append(out, conformance.Message{Text: text, Size: len(utf16.Encode([]rune(text))), ID: string(ev.ID)})
	}
	return out, nil
}

var tags = regexp.MustCompile(`<[^>]*>`)

// shown is a message's text as a client shows it.
func shown(m *event.MessageEventContent) string {
	if m.Format == event.FormatHTML && m.FormattedBody != "" {
		return html.UnescapeString(tags.ReplaceAllString(m.FormattedBody, ""))
	}
	return m.Body
}

// Answer replies to the question as a person would: Matrix has no
// buttons.
func (u *mxUser) Answer(ctx context.Context, where conformance.Where, q conformance.Message, choice string) error {
	text := map[string]string{"once": "/approve", "session": "/approve session", "always": "/approve always", "deny": "/deny"}[choice]
	if text == "" {
		return fmt.Errorf("no answer for choice %q", choice)
	}
	c := &event.MessageEventContent{MsgType: event.MsgText, Body: text}
	c.RelatesTo = (&event.RelatesTo{}).SetReplyTo(id.EventID(q.ID))
	_, err := u.u.Client.SendMessageEvent(ctx, u.room(where), event.EventMessage, c)
	return err
}
