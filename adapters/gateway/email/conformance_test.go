package email_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/conformance"
	"github.com/hermes-go/hermes/adapters/gateway/email"
	"github.com/hermes-go/hermes/adapters/gateway/email/emailtest"
)

// The gateway conformance suite against the email adapter: Dovecot holds
// the bot's mailbox (a fresh bot address per case) and delivers the
// users' mail into it over LMTP; maildev takes the bot's mail.
func TestConformance(t *testing.T) {
	t.Parallel()
	p := &mailPeer{dv: emailtest.StartDovecot(t, emailtest.DovecotOptions{AnyUser: "conformance-secret"}), md: emailtest.StartOpenMaildev(t)}
	conformance.Run(t, p)
}

// mailPeer is the mail servers, with users who write mail as a mail
// client does: a first message starts a thread (a chat), later ones reply
// to the last mail the bot sent them in it.
type mailPeer struct {
	dv *emailtest.Dovecot
	md *emailtest.Maildev

	mu    sync.Mutex
	n     int
	state string // the state directory of the current case's adapters
}

func (p *mailPeer) Name() string { return email.Platform }

func (p *mailPeer) Caps() conformance.Caps {
	return conformance.Caps{Limit: 0, Groups: false, Restart: true,
		Unsupported: map[conformance.Case]string{
			conformance.CaseGroupMention: "email has no group chats with mentions: every mail to the bot's address is addressed to it",
		}}
}

func (p *mailPeer) Users(t testing.TB) conformance.Users {
	p.mu.Lock()
	p.n++
	n := p.n
	p.state = filepath.Join(t.TempDir(), "state")
	p.mu.Unlock()
	user := func(name string) conformance.User {
		return &mailUser{p: p, addr: fmt.Sprintf("%s-%d@example.test", name, n), bot: p.bot(n)}
	}
	return conformance.Users{Alice: user("alice"), Bob: user("bob"), Stranger: user("mallory")}
}

func (p *mailPeer) bot(n int) string { return fmt.Sprintf("bot-%d@example.test", n) }

func (p *mailPeer) NewPlatform(t testing.TB) gw.Platform {
	p.mu.Lock()
	bot, state := p.bot(p.n), p.state
	p.mu.Unlock()
	ad, err := email.New(email.Config{Address: bot, Password: "conformance-secret", IMAPHost: "127.0.0.1", IMAPPort: p.dv.IMAPPort,
		SMTPHost: "127.0.0.1", SMTPPort: p.md.SMTPPort, StateDir: state, CacheDir: t.TempDir(), PollInterval: 100 * time.Millisecond, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	return ad
}

func (p *mailPeer) Mention(text string) string { return text }

// Restart restarts Dovecot (the IMAP server the adapter is logged in to)
// on the same ports.
func (p *mailPeer) Restart(t testing.TB) {
	p.dv.Stop()
	p.dv.Start()
}

type mailUser struct {
	p    *mailPeer
	addr string
	bot  string

	mu   sync.Mutex
	root string // the first message of the user's thread
	mine []string
}

func (u *mailUser) ID() string { return u.addr }

func (u *mailUser) Send(ctx context.Context, where conformance.Where, text string) error {
	if where != conformance.DM {
		return fmt.Errorf("email has no group chats")
	}
	got, err := u.Received(ctx, where)
	if err != nil {
		return err
	}
	u.mu.Lock()
	id := fmt.Sprintf("<%s.%d@example.test>", strings.Split(u.addr, "@")[0], len(u.mine)+1)
	headers := []string{"From: " + u.addr, "To: " + u.bot, "Message-ID: " + id, "Date: " + time.Now().Format(time.RFC1123Z),
		"MIME-Version: 1.0", "Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: 8bit"}
	if u.root == "" {
		u.root = id
		headers = append(headers, "Subject: Conformance")
	} else {
		parent := u.mine[len(u.mine)-1]
		if len(got) > 0 {
			parent = got[len(got)-1].ID
		}
		refs := u.root
		if parent != u.root {
			refs += " " + parent
		}
		headers = append(headers, "Subject: Re: Conformance", "In-Reply-To: "+parent, "References: "+refs)
	}
	u.mine = append(u.mine, id)
	u.mu.Unlock()
	return u.p.dv.Send(ctx, u.addr, []string{u.bot}, emailtest.Compose(headers, text+"\n"))
}

// Received is the bot's mail to this user, oldest first, as a mail
// client shows its text.
func (u *mailUser) Received(ctx context.Context, _ conformance.Where) ([]conformance.Message, error) {
	all, err := u.p.md.Messages(ctx)
	if err != nil {
		return nil, err
	}
	var out []conformance.Message
	for _, m := range all {
		if len(m.To) != 1 || !strings.EqualFold(m.To[0], u.addr) {
			continue
		}
		out = append(out, conformance.Message{Text: strings.ReplaceAll(m.Text, "\r\n", "\n"), ID: m.Header.Get("Message-Id")})
	}
	return out, nil
}

// Answer replies to the question with the command a person would type.
func (u *mailUser) Answer(ctx context.Context, where conformance.Where, _ conformance.Message, choice string) error {
	cmd := "/approve"
	switch choice {
	case "deny":
		cmd = "/deny"
	case "session", "always":
		cmd += " " + choice
	}
	return u.Send(ctx, where, cmd)
}
