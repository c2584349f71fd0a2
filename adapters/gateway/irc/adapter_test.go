package irc_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/adapters/bus"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/irc"
	"github.com/hermes-go/hermes/adapters/gateway/irc/irctest"
	"github.com/hermes-go/hermes/schema"
)

// inbox collects what an adapter publishes.
type inbox struct {
	mu  sync.Mutex
	got []schema.Inbound
}

func (b *inbox) put(_ context.Context, in schema.Inbound) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = append(b.got, in)
	return nil
}

func (b *inbox) all() []schema.Inbound {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]schema.Inbound(nil), b.got...)
}

// run starts the adapter's Run until the test ends; the returned channel
// gets what Run returned.
func run(t *testing.T, ad *irc.Adapter, in gw.Inbox) chan error {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ad.Run(ctx, in) }()
	t.Cleanup(func() { cancel(); <-done })
	return done
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 20 s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func newAdapter(t *testing.T, srv *irctest.Server, cfg irc.Config) *irc.Adapter {
	t.Helper()
	cfg.Server, cfg.Port, cfg.Log = "127.0.0.1", srv.Port, zerolog.Nop()
	if cfg.Nick == "" {
		cfg.Nick = botNick
	}
	if cfg.ReconnectMin == 0 {
		cfg.ReconnectMin, cfg.LinesPerSecond, cfg.Burst = 50*time.Millisecond, 50, 20
	}
	ad, err := irc.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ad
}

// With its nick taken, the bot takes a variant, and is reachable by it:
// what it is sent arrives with the sender's id, and its answer arrives.
func TestNickCollision(t *testing.T) {
	srv := irctest.Start(t)
	squatter := irctest.Dial(t, srv.Addr(), botNick)
	alice := irctest.Dial(t, srv.Addr(), "alice", "#room")
	ad := newAdapter(t, srv, irc.Config{Channels: []string{"#room"}, AllowedUsers: []string{"alice"}})
	var box inbox
	run(t, ad, box.put)
	waitFor(t, "the bot to connect", ad.Connected)
	if ad.Nick() != botNick+"_" {
		t.Fatalf("nick %q with %q taken", ad.Nick(), botNick)
	}
	if err := alice.Say(ad.Nick(), "hello there"); err != nil {
		t.Fatal(err)
	}
	if err := alice.Say("#room", "hermes_: in the room"); err != nil {
		t.Fatal(err)
	}
	if err := alice.Say("#room", "just chatting"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "three messages", func() bool { return len(box.all()) == 3 })
	got := box.all()
	if m := got[0]; m.User != "alice" || m.Chat != "alice" || m.ChatType != "dm" || m.Text != "hello there" || m.MessageID == "" {
		t.Fatalf("direct message %+v", m)
	}
	if m := got[1]; m.Chat != "#room" || m.ChatType != "group" || !m.Mentioned || m.Text != "in the room" {
		t.Fatalf("addressed channel message %+v", m)
	}
	if m := got[2]; m.Mentioned || m.Text != "just chatting" {
		t.Fatalf("channel chatter %+v", m)
	}
	if _, err := ad.Send(context.Background(), schema.Outbound{Kind: "reply", Chat: "alice", Text: "hi alice"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the answer", func() bool { return len(alice.Messages(botNick, "alice")) == 1 })
	if got := alice.Messages(botNick, "alice")[0].Text; got != "hi alice" {
		t.Fatalf("alice got %q", got)
	}
	// The squatter got nothing.
	if n := len(squatter.Messages(botNick, botNick)); n != 0 {
		t.Fatalf("the squatter got %d messages", n)
	}
}

// The flood control holds lines back beyond the burst: a delivery whose
// context ends first stops after the burst, and its retry sends the rest,
// none twice.
func TestFloodControlAndResume(t *testing.T) {
	srv := irctest.Start(t)
	alice := irctest.Dial(t, srv.Addr(), "alice")
	ad := newAdapter(t, srv, irc.Config{LinesPerSecond: 1, Burst: 2, ReconnectMin: 50 * time.Millisecond})
	run(t, ad, (&inbox{}).put)
	waitFor(t, "the bot to connect", ad.Connected)
	out := schema.Outbound{Kind: "reply", ReplyID: "r1", Chat: "alice", Text: "one\ntwo\nthree\nfour"}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := ad.Send(ctx, out)
	cancel()
	if err == nil {
		t.Fatal("four lines went out at once through a bucket of two")
	}
	waitFor(t, "the burst", func() bool { return len(alice.Messages(botNick, "alice")) == 2 })
	ids, err := ad.Send(context.Background(), out)
	if err != nil || len(ids) != 2 {
		t.Fatalf("the retry: %v, ids %v", err, ids)
	}
	waitFor(t, "the rest", func() bool { return len(alice.Messages(botNick, "alice")) == 4 })
	var texts []string
	for _, l := range alice.Messages(botNick, "alice") {
		texts = append(texts, l.Text)
	}
	if strings.Join(texts, ",") != "one,two,three,four" {
		t.Fatalf("alice got %v", texts)
	}
}

// A wrong server password is a permanent refusal: Run returns it rather
// than hammering the server.
func TestWrongPasswordIsPermanent(t *testing.T) {
	srv := irctest.StartWith(t, "\tPassword = s3cret")
	ad := newAdapter(t, srv, irc.Config{Password: "wrong"})
	done := run(t, ad, (&inbox{}).put)
	select {
	case err := <-done:
		var perm *gw.PermanentError
		if !errors.As(err, &perm) {
			t.Fatalf("Run returned %v, want a permanent error", err)
		}
		if strings.Contains(err.Error(), "wrong") {
			t.Fatalf("the error shows the password: %v", err)
		}
		done <- err // for the cleanup
	case <-time.After(20 * time.Second):
		t.Fatal("Run kept going with a wrong password")
	}
	// The right one works.
	ok := newAdapter(t, srv, irc.Config{Nick: "hermes2", Password: "s3cret"})
	run(t, ok, (&inbox{}).put)
	waitFor(t, "the bot to connect with the right password", ok.Connected)
}

// Outbound messages that cannot be IRC targets are refused for good.
func TestSendRefusesBadTargets(t *testing.T) {
	ad, err := irc.New(irc.Config{Server: "127.0.0.1", Nick: botNick})
	if err != nil {
		t.Fatal(err)
	}
	for _, chat := range []string{"", "two words", "a,b", "x\r\nQUIT"} {
		_, err := ad.Send(context.Background(), schema.Outbound{Kind: "reply", Chat: chat, Text: "x"})
		var perm *gw.PermanentError
		if !errors.As(err, &perm) {
			t.Errorf("chat %q: %v, want a permanent error", chat, err)
		}
	}
	// Not connected: a retryable error.
	_, err = ad.Send(context.Background(), schema.Outbound{Kind: "reply", Chat: "alice", Text: "x"})
	var perm *gw.PermanentError
	if err == nil || errors.As(err, &perm) {
		t.Fatalf("not connected: %v", err)
	}
}

// Kicked from a channel, the bot joins it again.
func TestKickedBotRejoins(t *testing.T) {
	srv := irctest.Start(t)
	op := irctest.Dial(t, srv.Addr(), "op", "#room") // first in: channel operator
	ad := newAdapter(t, srv, irc.Config{Channels: []string{"#room"}})
	var box inbox
	run(t, ad, box.put)
	waitFor(t, "the bot to connect", ad.Connected)
	waitFor(t, "the op to see the bot join", func() bool { return op.Joins(botNick, "#room") == 1 })
	if err := op.Raw("KICK", "#room", botNick, "out"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the bot to join again", func() bool { return op.Joins(botNick, "#room") == 2 })
	// Back in: it hears the channel again.
	if err := op.Say("#room", "hermes: are you back?"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the message", func() bool { return len(box.all()) > 0 })
	if m := box.all()[0]; m.Chat != "#room" || !m.Mentioned {
		t.Fatalf("after the kick: %+v", m)
	}
}

// A message the bus cannot take is not dropped in silence: the sender is
// told to send it again, and the bot stays connected.
func TestInboxFailureTellsTheSender(t *testing.T) {
	srv := irctest.Start(t)
	alice := irctest.Dial(t, srv.Addr(), "alice")
	ad := newAdapter(t, srv, irc.Config{})
	run(t, ad, func(context.Context, schema.Inbound) error { return errors.New("bus down") })
	waitFor(t, "the bot to connect", ad.Connected)
	if err := alice.Say(botNick, "hello?"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the notice", func() bool { return len(alice.Notices(botNick)) == 1 })
	if n := alice.Notices(botNick)[0]; !strings.Contains(n.Text, "send it again") || n.Target != "alice" {
		t.Fatalf("notice %+v", n)
	}
	if !ad.Connected() {
		t.Fatal("the bot dropped its connection")
	}
}

// While the server is away, the gateway's status says the platform is not
// connected and why; once it is back, the bot reconnects by itself.
func TestStatusWhileTheServerIsAway(t *testing.T) {
	srv := irctest.Start(t)
	srv.Kill()
	ad := newAdapter(t, srv, irc.Config{})
	b, err := bus.Open("", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	served := gw.NewServed(ad, b, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = served.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "the status to show the failure", func() bool {
		st := served.Status()
		return !st.Connected && strings.Contains(st.LastError, "connect to "+srv.Addr())
	})
	srv.Start()
	waitFor(t, "the bot to reconnect", func() bool { return served.Status().Connected })
}

// Over TLS the bot connects to a server whose certificate it trusts, and
// refuses (and reports) one it does not.
func TestTLS(t *testing.T) {
	srv := irctest.StartTLS(t)
	alice := irctest.Dial(t, srv.Addr(), "alice")
	tlsCfg := func(nick string, pool *x509.CertPool) *irc.Adapter {
		ad, err := irc.New(irc.Config{Server: "127.0.0.1", Port: srv.TLSPort, TLS: true, TLSConfig: &tls.Config{RootCAs: pool},
			Nick: nick, ReconnectMin: 50 * time.Millisecond, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		return ad
	}
	untrusting := tlsCfg("doubter", x509.NewCertPool())
	run(t, untrusting, (&inbox{}).put)
	waitFor(t, "the certificate refused", func() bool {
		msg, _ := untrusting.LastError()
		return strings.Contains(msg, "certificate")
	})
	if untrusting.Connected() {
		t.Fatal("connected to a server it does not trust")
	}
	ad := tlsCfg(botNick, srv.CertPool)
	var box inbox
	run(t, ad, box.put)
	waitFor(t, "the bot to connect over TLS", ad.Connected)
	if err := alice.Say(botNick, "over tls?"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the message", func() bool { return len(box.all()) == 1 })
	if _, err := ad.Send(context.Background(), schema.Outbound{Kind: "reply", Chat: "alice", Text: "yes"}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.WaitMessages(botNick, "alice", 1, 20*time.Second); err != nil {
		t.Fatal(err)
	}
}
