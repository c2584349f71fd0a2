package matrix

import (
	"context"
	"testing"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// What counts as addressing the bot in a group room (the cases that need
// no server: a reply to an unknown event asks the homeserver).
func TestMentioned(t *testing.T) {
	a, err := New(Config{Homeserver: "http://127.0.0.1:1", UserID: "@hermes:example.org", AccessToken: "t"})
	if err != nil {
		t.Fatal(err)
	}
	a.displayName.Store("Hermes Bot")
	a.remember("$ours", "$answered-thread")
	thread := func(root id.EventID) *event.RelatesTo { return (&event.RelatesTo{}).SetThread(root, root) }
	for _, tc := range []struct {
		name string
		msg  event.MessageEventContent
		want bool
	}{
		{"plain chatter", event.MessageEventContent{Body: "hermes is a greek god"}, false},
		{"localpart prefix", event.MessageEventContent{Body: "hermes: hi"}, true},
		{"display name prefix", event.MessageEventContent{Body: "Hermes Bot, hi"}, true},
		{"full id", event.MessageEventContent{Body: "ask @hermes:example.org"}, true},
		{"m.mentions", event.MessageEventContent{Body: "hi", Mentions: &event.Mentions{UserIDs: []id.UserID{"@hermes:example.org"}}}, true},
		{"someone else's m.mentions", event.MessageEventContent{Body: "hi", Mentions: &event.Mentions{UserIDs: []id.UserID{"@alice:example.org"}}}, false},
		{"pill", event.MessageEventContent{Body: "Bot: hi", Format: event.FormatHTML,
			FormattedBody: `<a href="https://matrix.to/#/@hermes:example.org">Bot</a>: hi`}, true},
		{"command", event.MessageEventContent{Body: "/approve"}, true},
		{"reply to the bot", event.MessageEventContent{Body: "yes", RelatesTo: (&event.RelatesTo{}).SetReplyTo("$ours")}, true},
		{"thread the bot answered in", event.MessageEventContent{Body: "more", RelatesTo: thread("$answered-thread")}, true},
		{"thread the bot started", event.MessageEventContent{Body: "more", RelatesTo: thread("$ours")}, true},
		{"another thread", event.MessageEventContent{Body: "more", RelatesTo: thread("$other")}, false},
	} {
		if got := a.mentioned(context.Background(), "!r:example.org", &tc.msg, tc.msg.Body); got != tc.want {
			t.Errorf("%s: mentioned %v, want %v", tc.name, got, tc.want)
		}
	}
}
