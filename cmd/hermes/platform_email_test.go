package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/gateway/email/emailtest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// `hermes gateway run` with EMAIL_* set reads the bot's mailbox on Dovecot
// and answers through maildev; EMAIL_ALLOWED_USERS matches the sender's
// address whatever its case; the password is never logged.
func TestEmailGatewayAnswersMail(t *testing.T) {
	const bot, pass = "hermes@example.test", "s3cret-mail-pass"
	dv := emailtest.StartDovecot(t, emailtest.DovecotOptions{Users: map[string]string{bot: pass}})
	md := emailtest.StartMaildev(t, bot, pass)
	srv := llmtest.New(llmtest.Reply{Content: "Hello from Hermes."})
	defer srv.Close()
	home := t.TempDir()
	env := chatEnv(srv, "EMAIL_ADDRESS="+bot, "EMAIL_PASSWORD="+pass, "EMAIL_IMAP_HOST=127.0.0.1", "EMAIL_IMAP_PORT="+strconv.Itoa(dv.IMAPPort),
		"EMAIL_SMTP_HOST=127.0.0.1", "EMAIL_SMTP_PORT="+strconv.Itoa(md.SMTPPort), "EMAIL_POLL_INTERVAL=1",
		"EMAIL_ALLOWED_USERS=Someone@Else.test, Alice@Example.TEST")
	g := startGateway(t, home, env)
	dv.Deliver(t, "alice@example.test", []string{bot}, emailtest.Compose([]string{"From: Alice <alice@example.test>", "To: " + bot,
		"Subject: hi", "Message-ID: <w1@example.test>", "Content-Type: text/plain; charset=utf-8"}, "Are you there?"))
	got := md.Wait(t, 1)
	if strings.TrimSpace(got[0].Text) != "Hello from Hermes." || got[0].Header.Get("In-Reply-To") != "<w1@example.test>" {
		t.Fatalf("answer %q to %q", got[0].Text, got[0].Header.Get("In-Reply-To"))
	}
	out, _, rc := hermes(t, env, "", "--home", home, "gateway", "status")
	if rc != 0 || !strings.Contains(out, "email") || !strings.Contains(out, "yes") {
		t.Fatalf("status: %s", out)
	}
	out, _, _ = hermes(t, env, "", "--home", home, "config", "show")
	if !strings.Contains(out, "platforms.email") || !strings.Contains(out, "[someone@else.test alice@example.test]") || strings.Contains(out, pass) {
		t.Fatalf("config show prints the mail password:\n%s", out)
	}
	time.Sleep(200 * time.Millisecond)
	g.kill()
	if strings.Contains(g.stderr.String(), pass) {
		t.Fatal("the gateway logged the mail password")
	}
}
