package telegram

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mymmrac/telego"

	"github.com/hermes-go/hermes/adapters/gateway/telegram/telegramtest"
	"github.com/hermes-go/hermes/schema"
)

func testAdapter(t *testing.T, apiURL string) *Adapter {
	t.Helper()
	if apiURL == "" {
		apiURL = "http://127.0.0.1:1"
	}
	a, err := New(Config{Token: telegramtest.Token, APIURL: apiURL, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	a.botID.Store(424242)
	a.botName.Store("HermesBot")
	return a
}

func TestInboundMapping(t *testing.T) {
	a := testAdapter(t, "")
	alice := &telego.User{ID: 111, FirstName: "Alice", Username: "alice"}
	noNick := &telego.User{ID: 333, FirstName: "Carol", LastName: "Jones"}
	dm := telego.Chat{ID: 111, Type: "private"}
	group := telego.Chat{ID: -500, Type: "group", Title: "g"}
	forum := telego.Chat{ID: -100777, Type: "supergroup", IsForum: true}
	botMsg := &telego.Message{MessageID: 1, From: &telego.User{ID: 424242, IsBot: true, FirstName: "Hermes"}, Chat: group}
	for _, tc := range []struct {
		name string
		m    telego.Message
		ok   bool
		want schema.Inbound
	}{
		{"direct message", telego.Message{MessageID: 5, From: alice, Chat: dm, Text: "hi"}, true,
			schema.Inbound{Chat: "111", ChatType: "dm", User: "111", UserName: "@alice", MessageID: "111:5", Text: "hi"}},
		{"no username", telego.Message{MessageID: 6, From: noNick, Chat: telego.Chat{ID: 333, Type: "private"}, Text: "yo"}, true,
			schema.Inbound{Chat: "333", ChatType: "dm", User: "333", UserName: "Carol Jones", MessageID: "333:6", Text: "yo"}},
		{"group, not for the bot", telego.Message{MessageID: 7, From: alice, Chat: group, Text: "lunch?"}, true,
			schema.Inbound{Chat: "-500", ChatType: "group", User: "111", UserName: "@alice", MessageID: "-500:7", Text: "lunch?"}},
		{"group, @mention after an emoji (UTF-16 offsets)", telego.Message{MessageID: 8, From: alice, Chat: group, Text: "😀 @hermesbot hi",
			Entities: []telego.MessageEntity{{Type: "mention", Offset: 3, Length: 10}}}, true,
			schema.Inbound{Chat: "-500", ChatType: "group", User: "111", UserName: "@alice", MessageID: "-500:8", Text: "😀 @hermesbot hi", Mentioned: true}},
		{"group, another bot named", telego.Message{MessageID: 9, From: alice, Chat: group, Text: "@OtherBot hi",
			Entities: []telego.MessageEntity{{Type: "mention", Offset: 0, Length: 9}}}, true,
			schema.Inbound{Chat: "-500", ChatType: "group", User: "111", UserName: "@alice", MessageID: "-500:9", Text: "@OtherBot hi"}},
		{"group, text mention", telego.Message{MessageID: 10, From: alice, Chat: group, Text: "Hermes, hi",
			Entities: []telego.MessageEntity{{Type: "text_mention", Offset: 0, Length: 6, User: &telego.User{ID: 424242}}}}, true,
			schema.Inbound{Chat: "-500", ChatType: "group", User: "111", UserName: "@alice", MessageID: "-500:10", Text: "Hermes, hi", Mentioned: true}},
		{"group, reply to the bot", telego.Message{MessageID: 11, From: alice, Chat: group, Text: "and then?", ReplyToMessage: botMsg}, true,
			schema.Inbound{Chat: "-500", ChatType: "group", User: "111", UserName: "@alice", MessageID: "-500:11", Text: "and then?", Mentioned: true}},
		{"group, command for the bot", telego.Message{MessageID: 12, From: alice, Chat: group, Text: "/new@HermesBot",
			Entities: []telego.MessageEntity{{Type: "bot_command", Offset: 0, Length: 14}}}, true,
			schema.Inbound{Chat: "-500", ChatType: "group", User: "111", UserName: "@alice", MessageID: "-500:12", Text: "/new@HermesBot", Mentioned: true}},
		{"group, command for another bot", telego.Message{MessageID: 13, From: alice, Chat: group, Text: "/new@OtherBot",
			Entities: []telego.MessageEntity{{Type: "bot_command", Offset: 0, Length: 13}}}, true,
			schema.Inbound{Chat: "-500", ChatType: "group", User: "111", UserName: "@alice", MessageID: "-500:13", Text: "/new@OtherBot"}},
		{"group, bare command", telego.Message{MessageID: 14, From: alice, Chat: group, Text: "/stop",
			Entities: []telego.MessageEntity{{Type: "bot_command", Offset: 0, Length: 5}}}, true,
			schema.Inbound{Chat: "-500", ChatType: "group", User: "111", UserName: "@alice", MessageID: "-500:14", Text: "/stop", Mentioned: true}},
		{"group, no entities marked: the text is read", telego.Message{MessageID: 15, From: alice, Chat: group, Text: "hey @HERMESBOT!"}, true,
			schema.Inbound{Chat: "-500", ChatType: "group", User: "111", UserName: "@alice", MessageID: "-500:15", Text: "hey @HERMESBOT!", Mentioned: true}},
		{"group, a longer name is not the bot", telego.Message{MessageID: 16, From: alice, Chat: group, Text: "hey @hermesbotx"}, true,
			schema.Inbound{Chat: "-500", ChatType: "group", User: "111", UserName: "@alice", MessageID: "-500:16", Text: "hey @hermesbotx"}},
		{"forum topic", telego.Message{MessageID: 17, MessageThreadID: 42, IsTopicMessage: true, From: alice, Chat: forum, Text: "@HermesBot status",
			Entities: []telego.MessageEntity{{Type: "mention", Offset: 0, Length: 10}}}, true,
			schema.Inbound{Chat: "-100777", ChatType: "group", Thread: "42", User: "111", UserName: "@alice", MessageID: "-100777:17", Text: "@HermesBot status", Mentioned: true}},
		{"a reply thread is not a topic", telego.Message{MessageID: 18, MessageThreadID: 3, From: alice, Chat: telego.Chat{ID: -9, Type: "supergroup"}, Text: "x"}, true,
			schema.Inbound{Chat: "-9", ChatType: "group", User: "111", UserName: "@alice", MessageID: "-9:18", Text: "x"}},
		{"caption", telego.Message{MessageID: 19, From: alice, Chat: dm, Caption: "see"}, true,
			schema.Inbound{Chat: "111", ChatType: "dm", User: "111", UserName: "@alice", MessageID: "111:19", Text: "see"}},
		{"channel post", telego.Message{MessageID: 20, From: alice, Chat: telego.Chat{ID: -1001, Type: "channel"}, Text: "news"}, false, schema.Inbound{}},
		{"from a bot", telego.Message{MessageID: 21, From: &telego.User{ID: 5, IsBot: true}, Chat: group, Text: "beep"}, false, schema.Inbound{}},
		{"anonymous (no sender)", telego.Message{MessageID: 22, Chat: group, Text: "boo"}, false, schema.Inbound{}},
		{"a sticker", telego.Message{MessageID: 23, From: alice, Chat: dm, Sticker: &telego.Sticker{FileID: "s"}}, false, schema.Inbound{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := a.inbound(context.Background(), 1, &tc.m)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.ok {
				t.Fatalf("ok = %v", ok)
			}
			if !ok {
				return
			}
			tc.want.Platform = "telegram"
			if got.Platform != tc.want.Platform || got.Chat != tc.want.Chat || got.ChatType != tc.want.ChatType || got.Thread != tc.want.Thread ||
				got.User != tc.want.User || got.UserName != tc.want.UserName || got.MessageID != tc.want.MessageID || got.Text != tc.want.Text ||
				got.Mentioned != tc.want.Mentioned {
				t.Fatalf("\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestNewChecksConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no token", Config{}, "TELEGRAM_BOT_TOKEN"},
		{"not a token", Config{Token: "hello"}, "not a bot token"},
		{"bad API URL", Config{Token: telegramtest.Token, APIURL: "ftp://x"}, "platforms.telegram.api_url"},
		{"bad webhook URL", Config{Token: telegramtest.Token, WebhookURL: "bot.example.org/hook"}, "platforms.telegram.webhook_url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error naming %q", err, tc.want)
			}
			if strings.Contains(err.Error(), telegramtest.Token) {
				t.Fatal("the error shows the token")
			}
		})
	}
}

// Every character Telegram's formats treat specially goes through the
// emulator as valid HTML and comes back as sent.
func TestEmulatorSpecialCharacters(t *testing.T) {
	emu := telegramtest.Start(t)
	a := testAdapter(t, emu.URL)
	special := `<>&"'*_[]()~` + "`" + `>#+-=|{}.!`
	for i, tc := range []struct{ md, visible string }{
		{special, special},
		{"# " + special, special},
		{"**" + special + "**", special},
		{"`" + special + "`", "<>&\"'*_[]()~"}, // the backtick ends the code span early: the rest is text
		{"```\n" + special + "\n```", special},
		{"> " + special, special},
		{"[" + "a<b>&c" + "](https://example.org/?q=1&r=<2>)", "[a<b>&c](https://example.org/?q=1&r=<2>)"},
		{"[a<b>&c](https://example.org/?q=1&r=2)", "a<b>&c"},
	} {
		ids, err := a.Send(context.Background(), schema.Outbound{Kind: "reply", Chat: "9000", Text: tc.md})
		if err != nil || len(ids) != 1 {
			t.Fatalf("case %d: %v %v", i, ids, err)
		}
		got := emu.WaitReceived(t, telegramtest.Token, 9000, i+1, 10*time.Second)[i]
		want := HTML(tc.md)
		if got.Message.Text != want || got.Message.ParseMode != "HTML" {
			t.Fatalf("case %d: the emulator got %q (%s), want %q", i, got.Message.Text, got.Message.ParseMode, want)
		}
		text, err := parseTelegramHTML(got.Message.Text)
		if err != nil {
			t.Fatalf("case %d: %q: %v", i, got.Message.Text, err)
		}
		if tc.visible != "" && !strings.HasPrefix(text, tc.visible) {
			t.Fatalf("case %d: visible text %q, want %q", i, text, tc.visible)
		}
	}
}
