package email_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/gateway"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/email"
	"github.com/hermes-go/hermes/adapters/gateway/email/emailtest"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/schema"
)

const (
	bot      = "bot@example.test"
	botPass  = "bot-secret"
	alice    = "alice@example.test"
	bob      = "bob@example.test"
	carolPwd = "carol-secret"
)

var users = map[string]string{bot: botPass, alice: "alice-secret", bob: "bob-secret", "carol@example.test": carolPwd}

// servers are the real mail servers of a test: Dovecot holds the bot's
// mailbox (mail reaches it over LMTP, as from an MTA), maildev takes what
// the bot sends over SMTP.
type servers struct {
	dv *emailtest.Dovecot
	md *emailtest.Maildev
}

func startServers(t testing.TB, noIdle bool) *servers {
	t.Helper()
	return &servers{dv: emailtest.StartDovecot(t, emailtest.DovecotOptions{Users: users, NoIdle: noIdle}),
		md: emailtest.StartMaildev(t, bot, botPass)}
}

func (s *servers) config(dir string) email.Config {
	return email.Config{Address: bot, Password: botPass, IMAPHost: "127.0.0.1", IMAPPort: s.dv.IMAPPort,
		SMTPHost: "127.0.0.1", SMTPPort: s.md.SMTPPort, StateDir: filepath.Join(dir, "state"), CacheDir: filepath.Join(dir, "cache"),
		PollInterval: 100 * time.Millisecond, Log: zerolog.Nop()}
}

// serve runs the adapter on the rig and waits until it is logged in.
func serve(t testing.TB, rig *gatewaytest.Rig, cfg email.Config) (*email.Adapter, *gw.Served) {
	t.Helper()
	ad, err := email.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	served := rig.Serve(ad, nil)
	gatewaytest.WaitFor(t, "the adapter to log in", func() bool {
		if st := served.Status(); st.LastError != "" {
			t.Fatalf("adapter: %s", st.LastError)
		}
		return ad.Connected()
	})
	return ad, served
}

func allow(addrs ...string) gateway.Config {
	return gateway.Config{Auth: gateway.Auth{Pairing: true, Platform: map[string][]string{email.Platform: addrs}}, TypingEvery: time.Hour}
}

// mailFrom is a plain message as a mail client writes it.
func mailFrom(from, subject, id, body string, extra ...string) []byte {
	h := []string{"From: " + from, "To: Hermes <" + bot + ">", "Subject: " + subject, "Message-ID: " + id,
		"Date: " + time.Now().Format(time.RFC1123Z), "MIME-Version: 1.0"}
	h = append(h, extra...)
	hasType := false
	for _, e := range extra {
		if strings.HasPrefix(strings.ToLower(e), "content-type:") {
			hasType = true
		}
	}
	if !hasType {
		h = append(h, "Content-Type: text/plain; charset=utf-8")
	}
	return emailtest.Compose(h, body)
}

func addrOf(tb testing.TB, m emailtest.Mail, key string) string {
	tb.Helper()
	l, err := m.Header.AddressList(key)
	if err != nil || len(l) != 1 {
		tb.Fatalf("%s: %v %v", key, l, err)
	}
	return l[0].Address
}

// An allowed sender's mail is answered by mail: from the bot, to the
// sender, "Re:" the subject, In-Reply-To and References naming the
// message, as quoted-printable UTF-8 text. Her reply to the answer (with
// the answer quoted, as clients do) continues the same session, and its
// answer threads under the whole conversation. The mail handled is \Seen.
func TestAllowedSenderGetsThreadedAnswers(t *testing.T) {
	t.Parallel()
	s := startServers(t, false)
	rig := gatewaytest.Start(t, gatewaytest.Options{Config: allow(email.NormAddress("Alice@Example.TEST")),
		Script: []llmtest.Reply{{Content: "Paris — **of course**."}, {Content: "Berlin."}}})
	serve(t, rig, s.config(t.TempDir()))

	s.dv.Deliver(t, alice, []string{bot}, mailFrom(`"Alice Liddell" <Alice@Example.test>`, "Capitals", "<q1@example.test>", "What is the capital of France?"))
	got := s.md.Wait(t, 1)
	a1 := got[0]
	if to := addrOf(t, a1, "To"); !strings.EqualFold(to, alice) {
		t.Fatalf("answer to %s", to)
	}
	if from := addrOf(t, a1, "From"); from != bot {
		t.Fatalf("answer from %s", from)
	}
	if subj, _ := a1.Header.Subject(); subj != "Re: Capitals" {
		t.Fatalf("subject %q", subj)
	}
	if irt := a1.Header.Get("In-Reply-To"); irt != "<q1@example.test>" {
		t.Fatalf("In-Reply-To %q", irt)
	}
	if refs := a1.Header.Get("References"); refs != "<q1@example.test>" {
		t.Fatalf("References %q", refs)
	}
	if ct := a1.Header.Get("Content-Type"); !strings.HasPrefix(ct, "multipart/alternative") {
		t.Fatalf("Content-Type %q", ct)
	}
	if ct := a1.TextHeader.Get("Content-Type"); !strings.Contains(ct, "text/plain") || !strings.Contains(strings.ToLower(ct), "utf-8") {
		t.Fatalf("text part's Content-Type %q", ct)
	}
	if te := a1.TextHeader.Get("Content-Transfer-Encoding"); te != "quoted-printable" {
		t.Fatalf("text part's Content-Transfer-Encoding %q", te)
	}
	if !strings.Contains(a1.HTML, "Paris — <strong>of course</strong>.") {
		t.Fatalf("HTML alternative %q", a1.HTML)
	}
	if a1.Header.Get("Auto-Submitted") != "auto-replied" {
		t.Fatalf("no Auto-Submitted on the answer")
	}
	if strings.TrimSpace(a1.Text) != "Paris — **of course**." {
		t.Fatalf("answer text %q", a1.Text)
	}
	answerID := a1.Header.Get("Message-Id")
	if answerID == "" {
		t.Fatal("the answer has no Message-ID")
	}
	reqs := rig.LLM.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Raw), "Subject: Capitals") || !strings.Contains(string(reqs[0].Raw), "capital of France?") {
		t.Fatalf("model requests: %d", len(reqs))
	}

	s.dv.Deliver(t, alice, []string{bot}, mailFrom(alice, "Re: Capitals", "<q2@example.test>",
		"And of Germany?\n\nOn Mon, 23 Nov 2026 at 10:00, Hermes <bot@example.test> wrote:\n> Paris — of course.\n",
		"In-Reply-To: "+answerID, "References: <q1@example.test> "+answerID))
	got = s.md.Wait(t, 2)
	a2 := got[1]
	if subj, _ := a2.Header.Subject(); subj != "Re: Capitals" {
		t.Fatalf("second subject %q", subj)
	}
	if irt := a2.Header.Get("In-Reply-To"); irt != "<q2@example.test>" {
		t.Fatalf("second In-Reply-To %q", irt)
	}
	if refs := a2.Header.Get("References"); refs != "<q1@example.test> "+answerID+" <q2@example.test>" {
		t.Fatalf("second References %q", refs)
	}
	reqs = rig.LLM.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	second := string(reqs[1].Raw)
	// One session: the second request carries the first exchange; the
	// quoted copy of the answer was cut from the new message.
	if !strings.Contains(second, "capital of France?") || !strings.Contains(second, "And of Germany?") || strings.Contains(second, "wrote:") {
		t.Fatalf("second request: %s", second)
	}
	if n := gatewaytest.CountTypes(t, rig.Store, "GatewaySessionBound"); n != 1 {
		t.Fatalf("%d sessions bound, want one for the thread", n)
	}
	// Both messages are \Seen in the bot's mailbox.
	c := login(t, s.dv, bot, botPass)
	defer c.Close()
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	unseen, err := c.UIDSearch(&imap.SearchCriteria{NotFlag: []imap.Flag{imap.FlagSeen}}, nil).Wait()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(unseen.AllUIDs()); n != 0 {
		t.Fatalf("%d messages still unseen", n)
	}
}

// A sender on no allow-list gets a pairing code by mail and nothing else:
// no model call, no session.
func TestUnknownSenderGetsOnlyAPairingCode(t *testing.T) {
	t.Parallel()
	s := startServers(t, false)
	rig := gatewaytest.Start(t, gatewaytest.Options{Config: allow(alice), Script: []llmtest.Reply{{Content: "must not be said"}}})
	serve(t, rig, s.config(t.TempDir()))
	// Alice's display name on Bob's address lets nobody in.
	s.dv.Deliver(t, bob, []string{bot}, mailFrom(`"alice@example.test" <bob@example.test>`, "hello", "<b1@example.test>", "let me in"))
	got := s.md.Wait(t, 1)
	if to := addrOf(t, got[0], "To"); to != bob {
		t.Fatalf("notice to %s", to)
	}
	if !regexp.MustCompile(`pairing code is [A-Z0-9]{8}`).MatchString(got[0].Text) {
		t.Fatalf("notice %q", got[0].Text)
	}
	if got[0].Header.Get("In-Reply-To") != "<b1@example.test>" {
		t.Fatalf("the notice does not reply to the message")
	}
	if n := len(rig.LLM.Requests()); n != 0 {
		t.Fatalf("%d model calls for an unknown sender", n)
	}
	if n := gatewaytest.CountTypes(t, rig.Store, "GatewaySessionBound"); n != 0 {
		t.Fatalf("%d sessions", n)
	}
	if !strings.Contains(gatewaytest.Payloads(t, rig.Store), `"user":"bob@example.test"`) {
		t.Fatal("no pairing request recorded for bob@example.test")
	}
}

// Automatic mail — auto-replies, list mail, bounces, mail from the
// mailer daemon or from the bot itself — reaches no session and no model,
// and is not answered; a person's mail after it is.
func TestAutomaticMailIsNeverAnswered(t *testing.T) {
	t.Parallel()
	s := startServers(t, false)
	rig := gatewaytest.Start(t, gatewaytest.Options{Config: allow(alice, bot, "mailer-daemon@example.test", "postmaster@example.test"),
		Script: []llmtest.Reply{{Content: "the only answer"}}})
	serve(t, rig, s.config(t.TempDir()))
	auto := []struct {
		name     string
		envelope string
		raw      []byte
	}{
		{"auto-submitted", alice, mailFrom(alice, "Out of office", "<x1@example.test>", "I am away.", "Auto-Submitted: auto-replied")},
		{"x-autoreply", alice, mailFrom(alice, "Away", "<x2@example.test>", "Away.", "X-Autoreply: yes")},
		{"precedence bulk", alice, mailFrom(alice, "News", "<x3@example.test>", "News.", "Precedence: bulk")},
		{"precedence list", alice, mailFrom(alice, "List", "<x4@example.test>", "List.", "Precedence: list")},
		{"list-id", alice, mailFrom(alice, "[list] hi", "<x5@example.test>", "Hi list.", "List-Id: <list.example.test>")},
		{"list-unsubscribe", alice, mailFrom(alice, "Offer", "<x6@example.test>", "Buy.", "List-Unsubscribe: <mailto:unsub@example.test>")},
		{"mailer-daemon", "", mailFrom("MAILER-DAEMON@example.test", "Undelivered Mail", "<x7@example.test>", "It bounced.")},
		{"postmaster", alice, mailFrom("postmaster@example.test", "Notice", "<x8@example.test>", "Postmaster here.")},
		{"own address", bot, mailFrom("Hermes <"+bot+">", "Re: loop", "<x9@example.test>", "Our own answer.")},
		{"null return path", "", mailFrom(alice, "Delivery Status", "<x10@example.test>", "Bounce.")},
		{"delivery report", alice, mailFrom(alice, "Report", "<x11@example.test>", "--b\r\nContent-Type: text/plain\r\n\r\nreport\r\n--b--\r\n",
			`Content-Type: multipart/report; report-type=delivery-status; boundary="b"`)},
	}
	for _, m := range auto {
		s.dv.Deliver(t, m.envelope, []string{bot}, m.raw)
	}
	s.dv.Deliver(t, alice, []string{bot}, mailFrom(alice, "A question", "<p1@example.test>", "A real question."))
	got := s.md.Wait(t, 1)
	if strings.TrimSpace(got[0].Text) != "the only answer" || got[0].Header.Get("In-Reply-To") != "<p1@example.test>" {
		t.Fatalf("answer %q to %q", got[0].Text, got[0].Header.Get("In-Reply-To"))
	}
	// The person's mail came last: everything before it was looked at.
	if n, _ := s.md.Count(context.Background()); n != 1 {
		t.Fatalf("%d mails sent", n)
	}
	if n := len(rig.LLM.Requests()); n != 1 {
		t.Fatalf("%d model calls", n)
	}
	if n := gatewaytest.CountTypes(t, rig.Store, "GatewayMessageReceived"); n != 1 {
		t.Fatalf("%d messages received by the router", n)
	}
}

// HTML-only mail reaches the model as text.
func TestHTMLMailReachesTheModelAsText(t *testing.T) {
	t.Parallel()
	s := startServers(t, false)
	rig := gatewaytest.Start(t, gatewaytest.Options{Config: allow(alice), Script: []llmtest.Reply{{Content: "ok"}}})
	serve(t, rig, s.config(t.TempDir()))
	html := `<html><head><style>p{color:red}</style><title>t</title></head><body><p>Hello <b>there</b>,</p>` +
		`<p>see <a href="https://example.org/doc">the doc</a>.</p><ul><li>one</li><li>two &amp; three</li></ul><script>alert(1)</script></body></html>`
	s.dv.Deliver(t, alice, []string{bot}, mailFrom(alice, "html", "<h1@example.test>", html, "Content-Type: text/html; charset=utf-8"))
	s.md.Wait(t, 1)
	reqs := rig.LLM.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	user := lastUser(t, reqs[0])
	for _, want := range []string{"Hello there,", "see the doc (https://example.org/doc).", "- one", "- two & three"} {
		if !strings.Contains(user, want) {
			t.Fatalf("the model saw %q, without %q", user, want)
		}
	}
	for _, bad := range []string{"<p>", "<b>", "color:red", "alert(1)", "&amp;"} {
		if strings.Contains(user, bad) {
			t.Fatalf("the model saw %q, with %q", user, bad)
		}
	}
}

// An attachment is saved under the cache directory and the model is told
// where; the text beside it arrives too.
func TestAttachmentIsSavedAndMentioned(t *testing.T) {
	t.Parallel()
	s := startServers(t, false)
	rig := gatewaytest.Start(t, gatewaytest.Options{Config: allow(alice), Script: []llmtest.Reply{{Content: "read it"}}})
	dir := t.TempDir()
	cfg := s.config(dir)
	serve(t, rig, cfg)
	body := "--mix\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nPlease read the notes.\r\n" +
		"--mix\r\nContent-Type: text/plain; name=\"notes.txt\"\r\nContent-Disposition: attachment; filename=\"notes.txt\"\r\nContent-Transfer-Encoding: base64\r\n\r\n" +
		"bm90ZXM6IGJ1eSBtaWxr\r\n--mix--\r\n"
	s.dv.Deliver(t, alice, []string{bot}, mailFrom(alice, "notes", "<n1@example.test>", body, `Content-Type: multipart/mixed; boundary="mix"`))
	s.md.Wait(t, 1)
	reqs := rig.LLM.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	user := lastUser(t, reqs[0])
	m := regexp.MustCompile(`\[attached file "notes\.txt" \(text/plain\): (\S+)\]`).FindStringSubmatch(user)
	if m == nil || !strings.Contains(user, "Please read the notes.") {
		t.Fatalf("the model saw %q", user)
	}
	data, err := os.ReadFile(m[1])
	if err != nil || string(data) != "notes: buy milk" {
		t.Fatalf("saved %q: %q %v", m[1], data, err)
	}
	if !strings.HasPrefix(m[1], cfg.CacheDir) {
		t.Fatalf("saved outside the cache: %s", m[1])
	}
	if !strings.Contains(gatewaytest.Payloads(t, rig.Store), `"name":"notes.txt"`) {
		t.Fatal("the attachment is not recorded with the message")
	}
}

// A restarted adapter — with a gateway that has never seen the mail, so
// the router's own deduplication cannot help — answers only new mail: not
// the mail it answered (\Seen), and not that mail marked unread again by
// a person's client either (the last UID is remembered).
func TestRestartDoesNotAnswerAgain(t *testing.T) {
	t.Parallel()
	s := startServers(t, false)
	dir := t.TempDir()
	cfg := s.config(dir)
	rig1 := gatewaytest.Start(t, gatewaytest.Options{Config: allow(alice), Script: []llmtest.Reply{{Content: "first"}}})
	serve(t, rig1, cfg)
	s.dv.Deliver(t, alice, []string{bot}, mailFrom(alice, "one", "<r1@example.test>", "first question"))
	s.md.Wait(t, 1)
	rig1.Stop()

	c := login(t, s.dv, bot, botPass)
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	if err := c.Store(imap.SeqSetNum(1), &imap.StoreFlags{Op: imap.StoreFlagsDel, Flags: []imap.Flag{imap.FlagSeen}}, nil).Close(); err != nil {
		t.Fatal(err)
	}
	c.Close()

	rig2 := gatewaytest.Start(t, gatewaytest.Options{Config: allow(alice), Script: []llmtest.Reply{{Content: "second"}}})
	serve(t, rig2, cfg)
	s.dv.Deliver(t, alice, []string{bot}, mailFrom(alice, "two", "<r2@example.test>", "second question"))
	got := s.md.Wait(t, 2)
	if strings.TrimSpace(got[1].Text) != "second" || got[1].Header.Get("In-Reply-To") != "<r2@example.test>" {
		t.Fatalf("after the restart: %q in reply to %q", got[1].Text, got[1].Header.Get("In-Reply-To"))
	}
	if reqs := rig2.LLM.Requests(); len(reqs) != 1 || strings.Contains(string(reqs[0].Raw), "first question") {
		t.Fatalf("the restarted gateway's model calls: %d", len(reqs))
	}
	if n, _ := s.md.Count(context.Background()); n != 2 {
		t.Fatalf("%d mails sent", n)
	}
}

// A server without IDLE is polled.
func TestPollsWithoutIdle(t *testing.T) {
	t.Parallel()
	s := startServers(t, true)
	rig := gatewaytest.Start(t, gatewaytest.Options{Config: allow(alice), Script: []llmtest.Reply{{Content: "polled"}}})
	ad, _ := serve(t, rig, s.config(t.TempDir()))
	if ad.Idling() {
		t.Fatal("the adapter thinks the server has IDLE")
	}
	s.dv.Deliver(t, alice, []string{bot}, mailFrom(alice, "poll", "<l1@example.test>", "anyone?"))
	if got := s.md.Wait(t, 1); strings.TrimSpace(got[0].Text) != "polled" {
		t.Fatalf("answer %q", got[0].Text)
	}
}

// The adapter reconnects when the IMAP server goes away and comes back,
// and mail that arrived meanwhile is answered.
func TestReconnectsAfterServerRestart(t *testing.T) {
	t.Parallel()
	s := startServers(t, false)
	rig := gatewaytest.Start(t, gatewaytest.Options{Config: allow(alice), Script: []llmtest.Reply{{Content: "back"}}})
	ad, served := serve(t, rig, s.config(t.TempDir()))
	s.dv.Stop()
	gatewaytest.WaitFor(t, "the adapter to notice", func() bool { return !ad.Connected() })
	// The adapter says why, while it retries, and gateway status shows it.
	gatewaytest.WaitFor(t, "the adapter to report the lost connection", func() bool {
		msg, at := ad.LastError()
		return msg != "" && !at.IsZero() && served.Status().LastError != ""
	})
	s.dv.Start()
	s.dv.Deliver(t, alice, []string{bot}, mailFrom(alice, "still there?", "<c1@example.test>", "hello again"))
	if got := s.md.Wait(t, 1); strings.TrimSpace(got[0].Text) != "back" {
		t.Fatalf("answer %q", got[0].Text)
	}
}

// A wrong IMAP password stops the adapter with a permanent error that
// says what to check; a wrong SMTP password makes delivery fail for good.
func TestBadPasswordIsAClearPermanentError(t *testing.T) {
	t.Parallel()
	s := startServers(t, false)
	cfg := s.config(t.TempDir())
	cfg.Password = "wrong"
	ad, err := email.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = ad.Run(ctx, func(context.Context, schema.Inbound) error { return nil })
	var perm *gw.PermanentError
	if !errors.As(err, &perm) || !strings.Contains(err.Error(), "EMAIL_PASSWORD") || !strings.Contains(err.Error(), bot) {
		t.Fatalf("Run: %v", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Fatalf("the error shows the password: %v", err)
	}
	_, err = ad.Send(ctx, schema.Outbound{Kind: "reply", Chat: alice + " <q@example.test>", InReplyTo: "<q@example.test>", Text: "hi"})
	if !errors.As(err, &perm) || !strings.Contains(err.Error(), "refused the login") {
		t.Fatalf("Send: %v", err)
	}
	if n, _ := s.md.Count(ctx); n != 0 {
		t.Fatalf("%d mails sent with a wrong password", n)
	}
}

func login(t testing.TB, dv *emailtest.Dovecot, user, pass string) *imapclient.Client {
	t.Helper()
	c, err := imapclient.DialInsecure(dv.IMAPAddr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Login(user, pass).Wait(); err != nil {
		t.Fatal(err)
	}
	return c
}

// lastUser is the last user message of a model request.
func lastUser(t testing.TB, r llmtest.Request) string {
	t.Helper()
	var v struct {
		Messages []struct{ Role, Content string }
	}
	if err := json.Unmarshal(r.Raw, &v); err != nil {
		t.Fatal(err)
	}
	for k := len(v.Messages) - 1; k >= 0; k-- {
		if v.Messages[k].Role == "user" {
			return v.Messages[k].Content
		}
	}
	t.Fatalf("no user message in %s", r.Raw)
	return ""
}

// Mail goes out over one kept SMTP connection; when the server has
// dropped it meanwhile, the next mail goes over a new one, at once.
func TestSMTPConnectionIsKeptAndReplaced(t *testing.T) {
	t.Parallel()
	s := startServers(t, false)
	ad, err := email.New(s.config(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	send := func(text string) {
		t.Helper()
		if _, err := ad.Send(ctx, schema.Outbound{Kind: "reply", Chat: alice + " <k@example.test>", InReplyTo: "<k@example.test>", Text: text, ReplyID: text}); err != nil {
			t.Fatalf("send %q: %v", text, err)
		}
	}
	send("one")
	send("two")
	s.md.Restart()
	send("three")
	got := s.md.Wait(t, 3)
	var texts []string
	for _, m := range got {
		texts = append(texts, strings.TrimSpace(m.Text))
	}
	if strings.Join(texts, ",") != "one,two,three" {
		t.Fatalf("maildev holds %v", texts)
	}
}

// A server that offers STARTTLS (and refuses logins before it) gets the
// password only after the upgrade, with its certificate checked.
func TestIMAPUsesSTARTTLSWhenOffered(t *testing.T) {
	t.Parallel()
	s := &servers{dv: emailtest.StartDovecot(t, emailtest.DovecotOptions{Users: users, TLS: true}), md: emailtest.StartMaildev(t, bot, botPass)}
	rig := gatewaytest.Start(t, gatewaytest.Options{Config: allow(alice), Script: []llmtest.Reply{{Content: "over TLS"}}})
	cfg := s.config(t.TempDir())
	cfg.TLS = &tls.Config{RootCAs: s.dv.RootCAs}
	serve(t, rig, cfg)
	s.dv.Deliver(t, alice, []string{bot}, mailFrom(alice, "tls", "<t1@example.test>", "secure?"))
	if got := s.md.Wait(t, 1); strings.TrimSpace(got[0].Text) != "over TLS" {
		t.Fatalf("answer %q", got[0].Text)
	}
	if !regexp.MustCompile(`imap-login: Info: Login: user=<bot@example.test>.*TLS`).MatchString(s.dv.Log()) {
		t.Fatalf("no TLS login in Dovecot's log:\n%s", s.dv.Log())
	}
	// Without the certificate trusted, nothing is sent.
	cfg.TLS = nil
	ad, err := email.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ad.Run(ctx, func(context.Context, schema.Inbound) error { return nil }); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Run with an untrusted certificate: %v", err)
	}
}

// A mailbox deleted and made again has a new UIDVALIDITY: its UIDs start
// over, and the adapter, seeing that, does not take the new mail for mail
// it handled (a UID remembered without its UIDVALIDITY would hide it).
func TestNewUIDValidityStartsOver(t *testing.T) {
	t.Parallel()
	s := startServers(t, false)
	dir := t.TempDir()
	cfg := s.config(dir)
	cfg.Mailbox = "Hermes"
	c := login(t, s.dv, bot, botPass)
	defer c.Close()
	appendMail := func(raw []byte) {
		t.Helper()
		w := c.Append("Hermes", int64(len(raw)), nil)
		if _, err := w.Write(raw); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Create("Hermes", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	appendMail(mailFrom(alice, "one", "<v1@example.test>", "first"))
	appendMail(mailFrom(alice, "two", "<v2@example.test>", "second"))
	rig1 := gatewaytest.Start(t, gatewaytest.Options{Config: allow(alice), Script: []llmtest.Reply{{Content: "a1"}, {Content: "a2"}}})
	serve(t, rig1, cfg)
	s.md.Wait(t, 2)
	rig1.Stop()

	if err := c.Delete("Hermes").Wait(); err != nil {
		t.Fatal(err)
	}
	if err := c.Create("Hermes", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	appendMail(mailFrom(alice, "three", "<v3@example.test>", "third")) // UID 1 again
	rig2 := gatewaytest.Start(t, gatewaytest.Options{Config: allow(alice), Script: []llmtest.Reply{{Content: "a3"}}})
	serve(t, rig2, cfg)
	got := s.md.Wait(t, 3)
	if strings.TrimSpace(got[2].Text) != "a3" || got[2].Header.Get("In-Reply-To") != "<v3@example.test>" {
		t.Fatalf("after the new UIDVALIDITY: %q in reply to %q", got[2].Text, got[2].Header.Get("In-Reply-To"))
	}
}

// Mail the gateway does not take (the bus refuses it) stays unread and is
// offered again until it is taken; only then is it \Seen.
func TestRefusedMailIsOfferedAgain(t *testing.T) {
	t.Parallel()
	s := startServers(t, false)
	ad, err := email.New(s.config(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	s.dv.Deliver(t, alice, []string{bot}, mailFrom(alice, "again", "<g1@example.test>", "try me"))
	c := login(t, s.dv, bot, botPass)
	defer c.Close()
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	unseen := func() int {
		d, err := c.UIDSearch(&imap.SearchCriteria{NotFlag: []imap.Flag{imap.FlagSeen}}, nil).Wait()
		if err != nil {
			t.Fatal(err)
		}
		return len(d.AllUIDs())
	}
	var mu sync.Mutex
	var offered []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- ad.Run(ctx, func(_ context.Context, in schema.Inbound) error {
			mu.Lock()
			defer mu.Unlock()
			offered = append(offered, in.MessageID)
			if len(offered) < 3 {
				if n, err := unseenOf(s.dv); n != 1 {
					t.Errorf("%d unseen while refused (%v)", n, err)
				}
				return errors.New("bus unavailable")
			}
			return nil
		})
	}()
	gatewaytest.WaitFor(t, "the mail to be taken and marked seen", func() bool {
		mu.Lock()
		n := len(offered)
		mu.Unlock()
		return n >= 3 && unseen() == 0
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if strings.Join(offered, " ") != "<g1@example.test> <g1@example.test> <g1@example.test>" {
		t.Fatalf("offered %v", offered)
	}
}

// unseenOf counts the unseen mail in the bot's inbox over a connection
// of its own (it runs on the adapter's goroutine: no t.Fatal).
func unseenOf(dv *emailtest.Dovecot) (int, error) {
	c, err := imapclient.DialInsecure(dv.IMAPAddr(), nil)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if err := c.Login(bot, botPass).Wait(); err != nil {
		return 0, err
	}
	if _, err := c.Select("INBOX", &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
		return 0, err
	}
	d, err := c.UIDSearch(&imap.SearchCriteria{NotFlag: []imap.Flag{imap.FlagSeen}}, nil).Wait()
	if err != nil {
		return 0, err
	}
	return len(d.AllUIDs()), nil
}
