package homeassistant_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/conformance"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/gateway/homeassistant"
	"github.com/hermes-go/hermes/adapters/gateway/homeassistant/hatest"
)

// The gateway conformance suite against the Home Assistant adapter on a
// real Home Assistant. Home Assistant is not a chat: a "user" writes to
// the agent by setting an input_text entity through the REST API (a state
// change the adapter watches), and reads the agent's answers as the
// persistent notifications the server lists. The cases that need people
// (pairing, chat commands, approvals, groups) do not apply; each says why.
func TestConformance(t *testing.T) {
	conformance.Run(t, &haPeer{srv: hatest.Start(t)})
}

// haPeer is one Home Assistant for the whole suite.
type haPeer struct {
	srv *hatest.Server

	mu   sync.Mutex
	n    int
	seen *inbox
	ad   *homeassistant.Adapter
}

func (p *haPeer) Name() string { return homeassistant.Platform }

func (p *haPeer) Caps() conformance.Caps {
	return conformance.Caps{Restart: true, Unsupported: map[conformance.Case]string{
		conformance.CasePairing: "Home Assistant's messages are state changes of the server the token authenticates, never a person's: " +
			"no stranger can write, so there is no allow-list and no pairing (the Python agent authorises them all too)",
		conformance.CaseSplit: "an answer longer than 4096 characters is cut, as the Python agent cuts it, not split: " +
			"a notification holds the whole of a normal answer (the cut is tested in TestSendAndRefusedToken)",
		conformance.CaseNewAndStop: "a state change's text is written by Home Assistant and verified, never a chat command (/new, /stop), " +
			"as on the webhook and the API server",
		conformance.CaseApproval: "a notification cannot be answered: nothing of Home Assistant reaches the gateway but state changes, " +
			"which are never an approval's answer",
	}}
}

// Users are the input_text fields alice, bob and carol, emptied for the
// case, and one inbox they share (Home Assistant has one list of
// notifications), counting only what this case's adapter creates.
func (p *haPeer) Users(t testing.TB) conformance.Users {
	p.mu.Lock()
	p.n++
	p.mu.Unlock()
	old := map[string]bool{}
	ns, err := p.srv.Notifications()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		old[n.ID] = true
	}
	box := &inbox{srv: p.srv, old: old, got: map[string]bool{}}
	p.mu.Lock()
	p.seen = box
	p.mu.Unlock()
	mk := func(field string) *haUser {
		if err := p.srv.SetText(field, ""); err != nil {
			t.Fatal(err)
		}
		return &haUser{srv: p.srv, field: field, box: box}
	}
	return conformance.Users{Alice: mk("alice"), Bob: mk("bob"), Stranger: mk("carol")}
}

func (p *haPeer) NewPlatform(t testing.TB) gw.Platform {
	ad, err := homeassistant.New(homeassistant.Config{URL: p.srv.URL, Token: p.srv.Token, WatchDomains: []string{"input_text"},
		MaxBackoff: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.ad = ad
	p.mu.Unlock()
	return ad
}

func (p *haPeer) Mention(text string) string { return text }

// Restart stops Home Assistant and starts it again on the same port, and
// returns once the adapter has subscribed again (a change made before
// that is not sent to anyone: Home Assistant keeps no backlog).
func (p *haPeer) Restart(t testing.TB) {
	p.mu.Lock()
	ad := p.ad
	p.mu.Unlock()
	before := ad.Connections()
	p.srv.Restart()
	gatewaytest.WaitFor(t, "the adapter to subscribe again", func() bool { return ad.Connections() > before && ad.Connected() })
}

// inbox is what a user sees of the notifications: every one created since
// the case began, in the order first seen. Home Assistant keeps them in
// memory only, so a restart empties its list; the inbox, as a person's
// screen, keeps what it has shown.
type inbox struct {
	srv *hatest.Server
	old map[string]bool

	mu   sync.Mutex
	got  map[string]bool
	list []conformance.Message
}

func (b *inbox) read() ([]conformance.Message, error) {
	ns, err := b.srv.Notifications()
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, n := range ns {
		if n.Title != homeassistant.NotificationTitle || b.old[n.ID] || b.got[n.ID] {
			continue
		}
		b.got[n.ID] = true
		b.list = append(b.list, conformance.Message{Text: n.Message, ID: n.ID})
	}
	return append([]conformance.Message(nil), b.list...), nil
}

// haUser writes by setting its input_text field.
type haUser struct {
	srv   *hatest.Server
	field string
	box   *inbox
}

// ID is the one sender of every Home Assistant message.
func (u *haUser) ID() string { return homeassistant.UserID }

func (u *haUser) Send(_ context.Context, where conformance.Where, text string) error {
	if where != conformance.DM {
		return fmt.Errorf("home assistant has no groups")
	}
	return u.srv.SetText(u.field, text)
}

func (u *haUser) Received(context.Context, conformance.Where) ([]conformance.Message, error) {
	return u.box.read()
}

func (u *haUser) Answer(context.Context, conformance.Where, conformance.Message, string) error {
	return fmt.Errorf("a Home Assistant notification cannot be answered")
}
