package email

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/emersion/go-message/mail"
	gomail "github.com/emersion/go-message/mail"
	"github.com/rs/zerolog"
)

func newTestAdapter(t *testing.T) *Adapter {
	t.Helper()
	a, err := New(Config{Address: "Hermes <Bot@Example.test>", Password: "p", IMAPHost: "127.0.0.1", SMTPHost: "127.0.0.1",
		StateDir: t.TempDir(), CacheDir: t.TempDir(), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func raw(headers ...string) []byte {
	return []byte(strings.Join(headers, "\r\n") + "\r\n\r\nbody\r\n")
}

// Which mail is never answered, and why.
func TestSkip(t *testing.T) {
	a := newTestAdapter(t)
	base := []string{"From: Alice <alice@example.test>", "To: bot@example.test", "Subject: hi", "Message-ID: <1@example.test>"}
	for _, tc := range []struct {
		name  string
		extra []string
		from  string
		skip  bool
	}{
		{name: "a person", skip: false},
		{name: "auto-submitted no", extra: []string{"Auto-Submitted: no"}, skip: false},
		{name: "auto-replied", extra: []string{"Auto-Submitted: auto-replied"}, skip: true},
		{name: "auto-generated", extra: []string{"Auto-Submitted: Auto-Generated"}, skip: true},
		{name: "x-autoreply", extra: []string{"X-Autoreply: yes"}, skip: true},
		{name: "x-autorespond", extra: []string{"X-Autorespond: vacation"}, skip: true},
		{name: "precedence bulk", extra: []string{"Precedence: Bulk"}, skip: true},
		{name: "precedence junk", extra: []string{"Precedence: junk"}, skip: true},
		{name: "precedence list", extra: []string{"Precedence: list"}, skip: true},
		{name: "precedence first-class", extra: []string{"Precedence: first-class"}, skip: false},
		{name: "list-id", extra: []string{"List-Id: <l.example.test>"}, skip: true},
		{name: "list-unsubscribe", extra: []string{"List-Unsubscribe: <mailto:u@example.test>"}, skip: true},
		{name: "null return path", extra: []string{"Return-Path: <>"}, skip: true},
		{name: "report", extra: []string{"Content-Type: multipart/report; report-type=delivery-status; boundary=x"}, skip: true},
		{name: "mailer-daemon", from: "From: MAILER-DAEMON@example.test", skip: true},
		{name: "postmaster", from: "From: Postmaster <postmaster@example.test>", skip: true},
		{name: "noreply", from: "From: <no-reply@shop.test>", skip: true},
		{name: "ourselves, other case", from: "From: \"Someone\" <BOT@example.TEST>", skip: true},
		{name: "our name, another address", from: "From: \"bot@example.test\" <eve@example.test>", skip: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := append([]string(nil), base...)
			if tc.from != "" {
				h[0] = tc.from
			}
			h = append(h, tc.extra...)
			m, err := a.parse(raw(h...), 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			if why := a.skip(m); (why != "") != tc.skip {
				t.Fatalf("skip = %q, want skipped: %v", why, tc.skip)
			}
		})
	}
}

func TestParseThreadsAndAddresses(t *testing.T) {
	a := newTestAdapter(t)
	m, err := a.parse(raw("From: \"Alice, A.\" <Alice@Example.TEST>", "Subject: =?utf-8?q?Caf=C3=A9?=", "Message-ID: <3@x.test>",
		"In-Reply-To: <2@x.test>", "References: <1@x.test> <2@x.test>"), 7, 9)
	if err != nil {
		t.Fatal(err)
	}
	if m.from != "alice@example.test" || m.name != "Alice, A." || m.subject != "Café" || m.id != "<3@x.test>" || m.root() != "<1@x.test>" {
		t.Fatalf("%+v", m)
	}
	in, err := a.inbound(m)
	if err != nil {
		t.Fatal(err)
	}
	if in.Chat != "alice@example.test <1@x.test>" || in.User != "alice@example.test" || in.Text != "body" {
		t.Fatalf("%+v", in)
	}
	from, root, err := splitChat(in.Chat)
	if err != nil || from != "alice@example.test" || root != "<1@x.test>" {
		t.Fatalf("splitChat: %q %q %v", from, root, err)
	}
	// No References: In-Reply-To names the thread; no Message-ID: one
	// stable across restarts stands in.
	m, err = a.parse(raw("From: bob@x.test", "In-Reply-To: <9@x.test>"), 7, 10)
	if err != nil || m.root() != "<9@x.test>" || m.id != "<7.10@hermes.invalid>" {
		t.Fatalf("%+v %v", m, err)
	}
	for _, bad := range []string{"nobody", "a@b.test <c@d.test", ""} {
		if _, _, err := splitChat(bad); err == nil {
			t.Fatalf("splitChat(%q) accepted", bad)
		}
	}
	if _, err := a.parse(raw("Subject: no sender"), 1, 1); err == nil {
		t.Fatal("mail without From accepted")
	}
}

func TestNormAddress(t *testing.T) {
	for in, want := range map[string]string{
		"Alice@Example.TEST":           "alice@example.test",
		" alice@example.test ":         "alice@example.test",
		"Alice <ALICE@example.test>":   "alice@example.test",
		`"bob@x.test" <alice@ex.test>`: "alice@ex.test",
		"not an address":               "",
		"":                             "",
	} {
		if got := NormAddress(in); got != want {
			t.Errorf("NormAddress(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReSubject(t *testing.T) {
	for in, want := range map[string]string{
		"Hello":          "Re: Hello",
		"Re: Hello":      "Re: Hello",
		"RE: re: Hello":  "Re: Hello",
		"AW: Hallo":      "Re: Hallo",
		"":               "Re: your message to Hermes",
		"  Re:  spaced ": "Re: spaced",
	} {
		if got := reSubject(in); got != want {
			t.Errorf("reSubject(%q) = %q, want %q", in, got, want)
		}
	}
}

// A reply is quoted-printable UTF-8 text, with an HTML alternative, and
// the threading headers; its text reads back as written.
func TestCompose(t *testing.T) {
	a := newTestAdapter(t)
	text := "Ünïcödé — line one\n" + strings.Repeat("long ", 30) + "\n.\nend"
	raw, err := a.compose("alice@example.test", "<r@example.test>", "Re: Café", "<2@x.test>", []string{"<1@x.test>", "<2@x.test>"}, text, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(raw, []byte("\r\n")) {
		if len(line) > 78 {
			t.Fatalf("a line of %d bytes: %q", len(line), line)
		}
		for _, c := range line {
			if c >= 0x80 {
				t.Fatalf("8-bit byte in %q", line)
			}
		}
	}
	mr, err := gomail.CreateReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	h := mr.Header
	subj, _ := h.Subject()
	if subj != "Re: Café" || h.Get("In-Reply-To") != "<2@x.test>" || h.Get("References") != "<1@x.test> <2@x.test>" ||
		h.Get("Message-Id") != "<r@example.test>" || !strings.HasPrefix(h.Get("Content-Type"), "multipart/alternative") {
		t.Fatalf("headers: %v", h)
	}
	var plain, html string
	for {
		p, err := mr.NextPart()
		if err != nil {
			break
		}
		ih := p.Header.(*gomail.InlineHeader)
		if ih.Get("Content-Transfer-Encoding") != "quoted-printable" {
			t.Fatalf("part %v", ih)
		}
		var b bytes.Buffer
		b.ReadFrom(p.Body)
		switch ct, params, _ := ih.ContentType(); {
		case ct == "text/plain" && params["charset"] == "utf-8":
			plain = b.String()
		case ct == "text/html" && params["charset"] == "utf-8":
			html = b.String()
		default:
			t.Fatalf("part %s %v", ct, params)
		}
	}
	if got := strings.ReplaceAll(plain, "\r\n", "\n"); got != text+"\n" {
		t.Fatalf("text part %q", got)
	}
	if !strings.Contains(html, "<p>Ünïcödé — line one") {
		t.Fatalf("html part %q", html)
	}
}

// The HTML alternative renders Markdown and never passes raw HTML on.
func TestMarkdownHTML(t *testing.T) {
	got := markdownHTML("**bold** and `code` <script>alert(1)</script>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
	for _, want := range []string{"<strong>bold</strong>", "<code>code</code>", "<table>", "<td>1</td>"} {
		if !strings.Contains(got, want) {
			t.Fatalf("%q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "<script>") {
		t.Fatalf("raw HTML passed on: %q", got)
	}
}

// The state survives a restart, and a damaged file is a clear error.
func TestStateFile(t *testing.T) {
	dir := t.TempDir()
	st, err := loadState(dir + "/state.json")
	if err != nil {
		t.Fatal(err)
	}
	st.UIDValidity, st.LastUID = 5, 42
	for i := range maxThreads + 10 {
		st.put(string(rune('a'+i%26))+strings.Repeat("x", i), &thread{Subject: "s"})
	}
	if err := st.save(); err != nil {
		t.Fatal(err)
	}
	back, err := loadState(dir + "/state.json")
	if err != nil || back.UIDValidity != 5 || back.LastUID != 42 || len(back.Messages) != maxThreads || len(back.Order) != maxThreads {
		t.Fatalf("%v %+v", err, back)
	}
	if err := os.WriteFile(dir+"/state.json", []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadState(dir + "/state.json"); err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Fatalf("damaged state: %v", err)
	}
}

// A reply's MEDIA: files under MediaRoots are attached (multipart/mixed:
// the text and its HTML, then each file, base64, named); a file elsewhere
// is not read, and the text says so.
func TestReplyAttachesFiles(t *testing.T) {
	a := newTestAdapter(t)
	root := t.TempDir()
	a.cfg.MediaRoots = []string{root}
	png := []byte("\x89PNG\r\n\x1a\n fake image bytes")
	pic := filepath.Join(root, "chart.png")
	os.WriteFile(pic, png, 0o644)
	secret := filepath.Join(t.TempDir(), "id_rsa")
	os.WriteFile(secret, []byte("PRIVATE"), 0o600)
	text, files := a.mediaOf("Here is the chart.\nMEDIA:" + pic + "\nMEDIA:" + secret)
	if len(files) != 1 || files[0] != pic || !strings.Contains(text, "id_rsa was not attached") || strings.Contains(text, "MEDIA:") {
		t.Fatalf("text %q files %v", text, files)
	}
	raw, err := a.compose("alice@example.test", "<r@example.test>", "Re: chart", "<2@x.test>", []string{"<2@x.test>"}, text, files)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("PRIVATE")) {
		t.Fatal("the file outside the roots was read into the mail")
	}
	mr, err := mail.CreateReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var gotText string
	var gotFile []byte
	var name, ctype string
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch h := p.Header.(type) {
		case *mail.InlineHeader:
			if ct, _, _ := h.ContentType(); ct == "text/plain" {
				b, _ := io.ReadAll(p.Body)
				gotText = string(b)
			}
		case *mail.AttachmentHeader:
			name, _ = h.Filename()
			ctype, _, _ = h.ContentType()
			gotFile, _ = io.ReadAll(p.Body)
		}
	}
	if !strings.Contains(gotText, "Here is the chart.") || name != "chart.png" || ctype != "image/png" || !bytes.Equal(gotFile, png) {
		t.Fatalf("text %q, attachment %q %q %d bytes", gotText, name, ctype, len(gotFile))
	}
}
