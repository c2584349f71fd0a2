package xmpp

import (
	"strings"
	"unicode"
	"unicode/utf8"

	goxmpp "github.com/xmppo/go-xmpp"

	"github.com/hermes-go/hermes/schema"
)

// inbound maps a message stanza. ok is false for what starts no turn:
// errors, headlines, chat states and other bodiless messages, the bot's own
// messages, a room's history replay and subject, and private messages
// through a room (whose sender has no account the allow-lists could name).
func (a *Adapter) inbound(m goxmpp.Chat) (schema.Inbound, bool) {
	from := m.Remote
	bare := bareJID(from)
	_, _, resource := splitJID(from)
	switch m.Type {
	case "groupchat":
		return a.groupMessage(m, bare, resource)
	case "error", "headline":
		return schema.Inbound{}, false
	}
	if a.rooms[bare] {
		a.log.Debug().Str("room", bare).Msg("ignoring a private message through a room")
		return schema.Inbound{}, false
	}
	if bare == a.bare || bare == "" || strings.TrimSpace(m.Text) == "" {
		// Our own messages, chat states. (A delayed one-to-one message
		// is one the server kept while the bot was away: it is
		// answered.)
		return schema.Inbound{}, false
	}
	return schema.Inbound{
		Platform:  Platform,
		Chat:      bare,
		ChatType:  "dm",
		User:      bare,
		UserName:  bare,
		MessageID: messageID(m, bare),
		Text:      m.Text,
	}, true
}

// groupMessage maps a room message.
func (a *Adapter) groupMessage(m goxmpp.Chat, room, nick string) (schema.Inbound, bool) {
	if !a.rooms[room] {
		return schema.Inbound{}, false
	}
	a.mu.Lock()
	live := a.live[room]
	if m.Subject != "" || (m.Text == "" && nick == "") {
		// The subject comes after the history (XEP-0045 §7.2.15); a room
		// without one sends an empty subject from its own JID, which
		// go-xmpp reads as a message with neither subject nor body.
		// From here on messages are live.
		a.live[room] = true
	}
	real := a.occupants[room][nick]
	mine := a.nicks[room]
	a.mu.Unlock()
	if mine == "" {
		mine = a.nick
	}
	if !live || !m.Stamp.IsZero() || nick == "" || nick == mine || strings.TrimSpace(m.Text) == "" {
		return schema.Inbound{}, false
	}
	user := real
	if user == "" {
		user = room + "/" + nick
	}
	return schema.Inbound{
		Platform:  Platform,
		Chat:      room,
		ChatType:  "group",
		User:      user,
		UserName:  nick,
		MessageID: messageID(m, room),
		Text:      m.Text,
		Mentioned: mentions(m.Text, mine),
	}, true
}

// messageID is the gateway's id of a message: the id the server stamped
// it with (XEP-0359 stanza-id, by the room or the bot's server), else the
// sender's origin-id; "" when it has neither.
func messageID(m goxmpp.Chat, by string) string {
	if m.StanzaID.ID != "" && strings.EqualFold(m.StanzaID.By, by) {
		return "s:" + m.StanzaID.ID
	}
	if m.OriginID != "" {
		return "o:" + bareJID(m.Remote) + ":" + m.OriginID
	}
	return ""
}

// mentions says whether a room message is for the bot: it names the nick
// as a word ("hermes: …", "… @hermes", "hey Hermes,"), or is a /command
// other than /me (such as /approve, which answers the bot's question).
func mentions(text, nick string) bool {
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "/") && !strings.HasPrefix(t, "/me ") && t != "/me" {
		return true
	}
	if nick == "" {
		return false
	}
	low, n := strings.ToLower(text), strings.ToLower(nick)
	for i := 0; ; {
		j := strings.Index(low[i:], n)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(n)
		if !wordAt(low, start-1, true) && !wordAt(low, end, false) {
			return true
		}
		i = start + 1
	}
}

// wordAt says whether the rune ending (before) or starting (after) at byte
// i is part of a word, which would make a nick found there part of a
// longer name.
func wordAt(s string, i int, before bool) bool {
	if i < 0 || i >= len(s) {
		return false
	}
	var r rune
	if before {
		r, _ = utf8.DecodeLastRuneInString(s[:i+1])
	} else {
		r, _ = utf8.DecodeRuneInString(s[i:])
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-'
}
