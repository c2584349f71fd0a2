package irc

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		max  int
		want []string
	}{
		{"short", "hello", 10, []string{"hello"}},
		{"lines become messages, blank lines dropped", "a\n\nb\r\nc\rd\n   \n", 10, []string{"a", "b", "c", "d"}},
		{"cut at a space", "aaaa bbbb cccc", 10, []string{"aaaa bbbb", "cccc"}},
		{"a long word is cut at a rune boundary", "ééééé", 5, []string{"éé", "éé", "é"}},
		{"never inside a 4-byte rune", "🚀🚀🚀", 5, []string{"🚀", "🚀", "🚀"}},
		{"indentation kept, trailing space dropped", "    x := 1   \n\tok", 20, []string{"    x := 1", "\tok"}},
		{"NUL removed", "a\x00b", 10, []string{"ab"}},
		{"invalid UTF-8 replaced", "a\xffb", 10, []string{"a\uFFFDb"}},
		{"a space too early is not used", "a bbbbbbbbbbbbbbbbbb", 10, []string{"a bbbbbbbb", "bbbbbbbbbb"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Split(tc.text, tc.max)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("Split(%q, %d) = %q, want %q", tc.text, tc.max, got, tc.want)
			}
			for _, p := range got {
				if len(p) > tc.max || !utf8.ValidString(p) || p == "" {
					t.Fatalf("piece %q: over %d bytes, empty or not UTF-8", p, tc.max)
				}
			}
		})
	}
}

// Every piece of a long multi-byte text fits and nothing but the spaces
// at the cuts is lost.
func TestSplitKeepsEverything(t *testing.T) {
	text := strings.Repeat("ünïcödé 日本語 🚀 wörds ", 200)
	for _, max := range []int{4, 7, 50, 400} {
		got := Split(text, max)
		for _, p := range got {
			if len(p) > max || !utf8.ValidString(p) {
				t.Fatalf("max %d: piece %q", max, p)
			}
		}
		if strings.Join(strings.Fields(strings.Join(got, " ")), "") != strings.Join(strings.Fields(text), "") {
			t.Fatalf("max %d: text changed", max)
		}
	}
}

func TestBudget(t *testing.T) {
	self, target := "hermes!~hermes@127.0.0.1", "#chan"
	text := strings.Repeat("x", Budget(self, target))
	line := ":" + self + " PRIVMSG " + target + " :" + text + "\r\n"
	if len(line) != MaxLine {
		t.Fatalf("a full line is %d bytes, want %d", len(line), MaxLine)
	}
}

func TestUserID(t *testing.T) {
	allowed := []string{"Alice", "bob!*@*.example.org", " ", "carol!carol@10.0.0.?"}
	for _, tc := range []struct{ nick, user, host, want string }{
		{"alice", "a", "h", "Alice"},                                     // nicks compare case-insensitively
		{"bob", "~bob", "home.example.org", "bob!*@*.example.org"},       // a mask
		{"bob", "~bob", "example.org.evil", "bob!~bob@example.org.evil"}, // the mask's host does not match
		{"carol", "carol", "10.0.0.7", "carol!carol@10.0.0.?"},
		{"carol", "carol", "10.0.0.77", "carol!carol@10.0.0.77"},
		{"[dan]", "d", "h", "[dan]!d@h"}, // not allowed: its own nick!user@host
	} {
		if got := UserID(allowed, tc.nick, tc.user, tc.host); got != tc.want {
			t.Errorf("UserID(%s!%s@%s) = %q, want %q", tc.nick, tc.user, tc.host, got, tc.want)
		}
	}
	// IRC's case mapping: {}|^ are the lower case of []\~.
	if UserID([]string{"[Dan]"}, "{dan}", "d", "h") != "[Dan]" {
		t.Fatal("rfc1459 case mapping not applied")
	}
}

func TestAddressedAndAlias(t *testing.T) {
	for _, tc := range []struct {
		text string
		ok   bool
		rest string
	}{
		{"hermes: hi there", true, "hi there"},
		{"Hermes, hi", true, "hi"},
		{"@hermes hi", true, "hi"},
		{"hermes hi", false, "hermes hi"},
		{"hermesbot: hi", false, "hermesbot: hi"},
		{"hi hermes: x", false, "hi hermes: x"},
		{"hermes", false, "hermes"},
	} {
		ok, rest := addressed(tc.text, "hermes")
		if ok != tc.ok || rest != tc.rest {
			t.Errorf("addressed(%q) = %v %q, want %v %q", tc.text, ok, rest, tc.ok, tc.rest)
		}
	}
	for in, want := range map[string]string{"!stop": "/stop", "!approve session": "/approve session", "!Deny": "/Deny", "!yes": "!yes", "stop": "stop",
		"!reset": "/reset", "!start": "/start", "!undo": "/undo", "!frobnicate": "!frobnicate", "!etc/motd": "!etc/motd"} {
		if got := alias(in); got != want {
			t.Errorf("alias(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Nick: "hermes"},
		{Server: "irc.example.org"},
		{Server: "irc.example.org", Nick: "her mes"},
		{Server: "irc.example.org", Nick: "hermes", Channels: []string{"nochan"}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	a, err := New(Config{Server: "irc.example.org", Nick: "hermes", TLS: true})
	if err != nil || a.cfg.Port != 6697 || a.cfg.User != "hermes" {
		t.Fatalf("defaults: %v %+v", err, a.cfg)
	}
}
