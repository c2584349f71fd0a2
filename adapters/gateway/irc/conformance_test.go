package irc_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/conformance"
	"github.com/hermes-go/hermes/adapters/gateway/irc"
	"github.com/hermes-go/hermes/adapters/gateway/irc/irctest"
	"github.com/hermes-go/hermes/schema"
)

// The gateway conformance suite against the IRC adapter on a real ngIRCd.
func TestConformance(t *testing.T) {
	conformance.Run(t, &ircPeer{srv: irctest.Start(t)})
}

const botNick = "hermes"

// ircPeer is ngIRCd with users who are raw IRC client connections.
type ircPeer struct {
	srv *irctest.Server
	// fault, when set, breaks the adapters it builds (see faulty).
	fault string

	mu      sync.Mutex
	n       int
	channel string
	allowed []string
	clients []*irctest.Client
	adapter *irc.Adapter
}

func (p *ircPeer) Name() string { return irc.Name }

func (p *ircPeer) Caps() conformance.Caps {
	return conformance.Caps{Limit: irc.MaxLine, Groups: true, Restart: true}
}

// Users are alice (allowed by nick), bob (allowed by a nick!user@host
// mask) and mallory (a stranger, known by nick!user@host), all in a fresh
// channel.
func (p *ircPeer) Users(t testing.TB) conformance.Users {
	p.mu.Lock()
	p.n++
	n := p.n
	p.channel = fmt.Sprintf("#conf%d", n)
	p.mu.Unlock()
	mk := func(name string) *irctest.Client {
		return irctest.Dial(t, p.srv.Addr(), fmt.Sprintf("%s%d", name, n), p.channel)
	}
	a, b, m := mk("alice"), mk("bob"), mk("mallory")
	p.mu.Lock()
	p.clients = []*irctest.Client{a, b, m}
	p.allowed = []string{a.Nick(), b.Nick() + "!*@127.0.0.1"}
	p.mu.Unlock()
	u := func(c *irctest.Client, id string) conformance.User {
		return &ircUser{p: p, c: c, id: id, channel: p.channel}
	}
	return conformance.Users{Alice: u(a, p.allowed[0]), Bob: u(b, p.allowed[1]), Stranger: u(m, m.Self())}
}

func (p *ircPeer) NewPlatform(t testing.TB) gw.Platform {
	p.mu.Lock()
	defer p.mu.Unlock()
	ad, err := irc.New(irc.Config{Server: "127.0.0.1", Port: p.srv.Port, Nick: botNick, Channels: []string{p.channel},
		AllowedUsers: p.allowed, LinesPerSecond: 50, Burst: 20, ReconnectMin: 50 * time.Millisecond, ReconnectMax: time.Second,
		Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	p.adapter = ad
	if p.fault != "" {
		return faulty{ad, p.fault}
	}
	return ad
}

func (p *ircPeer) Mention(text string) string { return p.bot() + ": " + text }

// bot is the nick the bot has now.
func (p *ircPeer) bot() string {
	p.mu.Lock()
	ad := p.adapter
	p.mu.Unlock()
	if ad != nil {
		if n := ad.Nick(); n != "" {
			return n
		}
	}
	return botNick
}

// Restart kills ngIRCd, starts it again on the same port, and reconnects
// the users.
func (p *ircPeer) Restart(t testing.TB) {
	p.srv.Kill()
	p.srv.Start()
	p.mu.Lock()
	cs := p.clients
	p.mu.Unlock()
	for _, c := range cs {
		if err := c.Reconnect(); err != nil {
			t.Fatal(err)
		}
	}
}

type ircUser struct {
	p       *ircPeer
	c       *irctest.Client
	id      string
	channel string
}

func (u *ircUser) ID() string { return u.id }

func (u *ircUser) target(where conformance.Where) string {
	if where == conformance.Group {
		return u.channel
	}
	return u.p.bot()
}

func (u *ircUser) Send(_ context.Context, where conformance.Where, text string) error {
	return u.c.Say(u.target(where), text)
}

func (u *ircUser) Received(_ context.Context, where conformance.Where) ([]conformance.Message, error) {
	to := u.c.Nick()
	if where == conformance.Group {
		to = u.channel
	}
	var out []conformance.Message
	for _, l := range u.c.Messages(botNick, to) {
		out = append(out, conformance.Message{Text: l.Text, Size: l.Size})
	}
	return out, nil
}

// Answer replies as an IRC user does: "!approve" (addressed to the bot in
// a channel).
func (u *ircUser) Answer(ctx context.Context, where conformance.Where, _ conformance.Message, choice string) error {
	text := "!approve " + choice
	switch choice {
	case "once":
		text = "!approve"
	case "deny":
		text = "!deny"
	}
	if where == conformance.Group {
		text = u.p.Mention(text)
	}
	return u.Send(ctx, where, text)
}

// faulty is the adapter with a deliberate bug, to show the suite catches
// it: "duplicate" sends every reply twice, "truncate" sends only the first
// 40 bytes of each.
type faulty struct {
	*irc.Adapter
	fault string
}

func (f faulty) Send(ctx context.Context, out schema.Outbound) ([]string, error) {
	switch f.fault {
	case "duplicate":
		if _, err := f.Adapter.Send(ctx, out); err != nil {
			return nil, err
		}
	case "truncate":
		if len(out.Text) > 40 {
			out.Text = out.Text[:40]
		}
	}
	return f.Adapter.Send(ctx, out)
}

// The suite run by a faulty adapter: only under TestSuiteCatchesFaults.
func TestFaultyConformance(t *testing.T) {
	fault := os.Getenv("HERMES_CONFORMANCE_FAULT")
	if fault == "" {
		t.Skip("run by TestSuiteCatchesFaults")
	}
	conformance.Run(t, &ircPeer{srv: irctest.Start(t), fault: fault})
}

// The suite fails an adapter that delivers twice or loses text, in the
// cases that check for it.
func TestSuiteCatchesFaults(t *testing.T) {
	irctest.Start(t) // skips (or fails under CI) without ngIRCd
	for _, tc := range []struct{ fault, cases, want string }{
		{"duplicate", "answer", "has 2 messages in the dm, want 1"},
		{"truncate", "split", "over a limit of 512 came as 1 message"},
		{"truncate", "formatting", "special characters changed"},
	} {
		t.Run(tc.fault+"/"+tc.cases, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestFaultyConformance$/^"+tc.cases+"$", "-test.count", "1", "-test.v")
			cmd.Env = append(os.Environ(), "HERMES_CONFORMANCE_FAULT="+tc.fault)
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), "--- FAIL: TestFaultyConformance/"+tc.cases) || !strings.Contains(string(out), tc.want) {
				t.Fatalf("the suite did not catch %s in %s (%v):\n%s", tc.fault, tc.cases, err, out)
			}
		})
	}
}
