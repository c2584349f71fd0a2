package xmpp

import (
	"context"
	"encoding/xml"
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	goxmpp "github.com/xmppo/go-xmpp"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/schema"
)

func TestMentions(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"hermes: hi", true},
		{"Hermes, what now?", true},
		{"what does @hermes think?", true},
		{"ask HERMES.", true},
		{"hermes", true},
		{"/approve", true},
		{"  /new", true},
		{"/me waves", false},
		{"/me", false},
		{"hermeses are gods", false},
		{"the hermes_bot is off", false},
		{"xhermes", false},
		{"hermes-like", false},
		{"nothing for the bot", false},
		{"", false},
		{"ünïhermes", false},
		{"é hermes é", true},
	} {
		if got := mentions(tc.text, "hermes"); got != tc.want {
			t.Errorf("mentions(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
	if mentions("hermes: hi", "") {
		t.Error("an empty nick is mentioned")
	}
}

func TestSplit(t *testing.T) {
	if got := Split("short", 100); len(got) != 1 || got[0] != "short" {
		t.Fatalf("short: %q", got)
	}
	if got := Split("\n\n", 100); len(got) != 0 {
		t.Fatalf("blank: %q", got)
	}
	// Paragraph breaks are preferred.
	para := strings.Repeat("a", 60) + "\n\n" + strings.Repeat("b", 60)
	if got := Split(para, 100); len(got) != 2 || got[0] != strings.Repeat("a", 60) || got[1] != strings.Repeat("b", 60) {
		t.Fatalf("paragraphs: %q", got)
	}
	// A word longer than the limit is cut between runes.
	word := strings.Repeat("ü🚀", 100)
	got := Split(word, 50)
	if strings.Join(got, "") != word {
		t.Fatal("a long word lost characters")
	}
	for _, p := range got {
		if n := utf8.RuneCountInString(p); n > 50 || !utf8.ValidString(p) {
			t.Fatalf("part of %d runes (valid %v)", n, utf8.ValidString(p))
		}
	}
	// A cut inside a code fence closes it and opens it again.
	code := "Intro.\n\n```go\n" + strings.Repeat("x := 1 // a line of code\n", 20) + "```\n\nOutro."
	got = Split(code, 200)
	if len(got) < 3 {
		t.Fatalf("%d parts", len(got))
	}
	for i, p := range got {
		if utf8.RuneCountInString(p) > 200 {
			t.Fatalf("part %d is over the limit: %d", i, utf8.RuneCountInString(p))
		}
		if strings.Count(p, "```")%2 != 0 {
			t.Fatalf("part %d has an unclosed fence:\n%s", i, p)
		}
	}
	if !strings.HasPrefix(got[1], "```go\n") {
		t.Fatalf("the second part does not reopen the fence: %q", got[1])
	}
	if n := strings.Count(strings.Join(got, "\n"), "x := 1 // a line of code"); n != 20 {
		t.Fatalf("%d code lines survive, want 20", n)
	}
}

func TestEscapeIsXML(t *testing.T) {
	in := "a <b> & 'c' \"d\"\r\n\x00\x1b ok 🚀"
	var v struct {
		XMLName xml.Name `xml:"m"`
		Body    string   `xml:"body"`
		To      string   `xml:"to,attr"`
	}
	doc := "<m to='" + escape(in) + "'><body>" + escape(in) + "</body></m>"
	if err := xml.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("%v: %s", err, doc)
	}
	want := "a <b> & 'c' \"d\"\r\n\uFFFD\uFFFD ok 🚀"
	if v.Body != want {
		t.Fatalf("body %q, want %q", v.Body, want)
	}
}

func TestNewChecksConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Password: "p"}, "platforms.xmpp.jid"},
		{Config{JID: "example.org", Password: "p"}, "platforms.xmpp.jid"},
		{Config{JID: "bot@example.org"}, "XMPP_PASSWORD"},
		{Config{JID: "bot@example.org", Password: "p", Rooms: []string{"room"}}, "platforms.xmpp.rooms[0]"},
		{Config{JID: "bot@example.org", Password: "p", Rooms: []string{"r@conference.example.org/nick"}}, "platforms.xmpp.rooms[0]"},
	} {
		_, err := New(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
	a, err := New(Config{JID: "Bot@Example.org", Password: "p", Server: "xmpp.example.org", Rooms: []string{"Team@Conference.Example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.bare != "bot@example.org" || a.nick != "Bot" || a.cfg.Server != "xmpp.example.org:5222" || !a.rooms["team@conference.example.org"] {
		t.Fatalf("adapter %+v", a)
	}
}

func TestInbound(t *testing.T) {
	a, err := New(Config{JID: "hermes@example.org", Password: "p", Rooms: []string{"team@muc.example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	room := "team@muc.example.org"
	a.occupants[room] = map[string]string{"Alice": "alice@example.org", "Anon": ""}
	dm := goxmpp.Chat{Remote: "Alice@Example.org/phone", Type: "chat", Text: "hi", OriginID: "o1"}
	in, ok := a.inbound(dm)
	want := schema.Inbound{Platform: Platform, Chat: "alice@example.org", ChatType: "dm", User: "alice@example.org",
		UserName: "alice@example.org", MessageID: "o:alice@example.org:o1", Text: "hi"}
	if !ok || !reflect.DeepEqual(in, want) {
		t.Fatalf("dm: %v %+v", ok, in)
	}
	// A message the server kept while the bot was away is answered.
	delayed := dm
	delayed.Stamp = time.Now()
	if _, ok := a.inbound(delayed); !ok {
		t.Fatal("an offline message was dropped")
	}
	for name, m := range map[string]goxmpp.Chat{
		"chat state":        {Remote: "alice@example.org/phone", Type: "chat"},
		"error":             {Remote: "alice@example.org", Type: "error", Text: "x"},
		"headline":          {Remote: "news@example.org", Type: "headline", Text: "x"},
		"own":               {Remote: "hermes@example.org/other", Type: "chat", Text: "x"},
		"private via room":  {Remote: room + "/Alice", Type: "chat", Text: "x"},
		"unknown room":      {Remote: "other@muc.example.org/Alice", Type: "groupchat", Text: "hermes: x"},
		"history (no live)": {Remote: room + "/Alice", Type: "groupchat", Text: "hermes: x"},
	} {
		if _, ok := a.inbound(m); ok {
			t.Errorf("%s: handed on", name)
		}
	}
	// The room's subject ends the history.
	if _, ok := a.inbound(goxmpp.Chat{Remote: room, Type: "groupchat"}); ok {
		t.Fatal("the subject was handed on")
	}
	for name, m := range map[string]goxmpp.Chat{
		"delayed": {Remote: room + "/Alice", Type: "groupchat", Text: "hermes: x", Stamp: time.Now()},
		"own":     {Remote: room + "/hermes", Type: "groupchat", Text: "x"},
		"subject": {Remote: room + "/Alice", Type: "groupchat", Subject: "topic"},
	} {
		if _, ok := a.inbound(m); ok {
			t.Errorf("live %s: handed on", name)
		}
	}
	in, ok = a.inbound(goxmpp.Chat{Remote: room + "/Alice", Type: "groupchat", Text: "hermes: x",
		StanzaID: goxmpp.StanzaID{ID: "s9", By: room}})
	if !ok || in.User != "alice@example.org" || in.Chat != room || in.ChatType != "group" || !in.Mentioned || in.UserName != "Alice" || in.MessageID != "s:s9" {
		t.Fatalf("group: %v %+v", ok, in)
	}
	in, ok = a.inbound(goxmpp.Chat{Remote: room + "/Anon", Type: "groupchat", Text: "just chatting"})
	if !ok || in.User != room+"/Anon" || in.Mentioned {
		t.Fatalf("anonymous occupant: %v %+v", ok, in)
	}
}

func TestSendOffline(t *testing.T) {
	a, err := New(Config{JID: "hermes@example.org", Password: "p"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Send(context.Background(), schema.Outbound{Kind: "reply", Chat: "alice@example.org", Text: "hi"})
	var perm *gw.PermanentError
	if !errors.Is(err, errOffline) || errors.As(err, &perm) {
		t.Fatalf("offline send: %v, want a retryable error", err)
	}
	for _, chat := range []string{"", "example.org", "alice@example.org/phone"} {
		_, err = a.Send(context.Background(), schema.Outbound{Kind: "reply", Chat: chat, Text: "hi"})
		if !errors.As(err, &perm) {
			t.Errorf("chat %q: %v, want a permanent error", chat, err)
		}
	}
	if ids, err := a.Send(context.Background(), schema.Outbound{Kind: "delta", Chat: "alice@example.org", Text: "h"}); err != nil || ids != nil {
		t.Fatalf("delta: %v %v", ids, err)
	}
}

// Split ends, keeps every part within the limit and loses no word, on
// text full of fences, blank lines and long words.
func TestSplitMixed(t *testing.T) {
	pieces := []string{"word ", "ünï ", "🚀🚀 ", "\n", "\n\n", "\n```\n", "\n```py\n", strings.Repeat("z", 37), "   "}
	for seed := range 200 {
		var b strings.Builder
		x := uint32(seed*2654435761 + 1)
		for range 300 {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			b.WriteString(pieces[x%uint32(len(pieces))])
		}
		text := b.String()
		limit := 16 + seed%120
		parts := Split(text, limit)
		for i, p := range parts {
			if n := utf8.RuneCountInString(p); n > limit {
				t.Fatalf("seed %d: part %d has %d runes, limit %d", seed, i, n, limit)
			}
		}
		// Every non-fence word survives, in order.
		strip := func(s string) string {
			var out []string
			for _, f := range strings.Fields(strings.ReplaceAll(s, "```py", " ")) {
				if f = strings.ReplaceAll(f, "```", ""); f != "" {
					out = append(out, f)
				}
			}
			return strings.Join(out, "")
		}
		if strip(strings.Join(parts, "")) != strip(text) {
			t.Fatalf("seed %d (limit %d): text changed", seed, limit)
		}
	}
}

// A server that accepts the connection and never speaks does not hold up
// a stop: Run returns once its context ends.
func TestRunStopsAgainstASilentServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	a, err := New(Config{JID: "hermes@example.org", Password: "p", Server: l.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, func(context.Context, schema.Inbound) error { return nil }) }()
	select {
	case c := <-accepted:
		defer c.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("the adapter did not connect")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if a.Connected() {
		t.Fatal("connected to a server that never answered")
	}
}
