package gateway

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// Reasons a chat is bound to a session (GatewaySessionBound.Reason) that
// go on in the conversation the chat had: the session continues the one
// before it.
var continuing = []string{"compression", "undo"}

// listedConversations is how many conversations /sessions shows.
const listedConversations = 10

// conversation is one of a chat's conversations: the session it goes on
// in now, and when the chat last went on in it.
type conversation struct {
	id string
	at time.Time
}

// conversations folds the chat's stream into its conversations, the one it
// went on in last first: a session a compression or a fork (/undo,
// /retry) continued is the conversation before, one a new conversation,
// /branch or an idle reset started is another, and /resume brings one
// back to the top. ever are all the sessions the chat was ever bound to:
// the only ones /resume takes, so that no chat reaches another's.
func (c *chat) conversations(ctx context.Context) (list []conversation, ever map[string]bool, err error) {
	rs, err := c.r.store.ReadStream(ctx, c.stream, events.Forward, 0, 0)
	if err != nil {
		return nil, nil, err
	}
	ever = map[string]bool{}
	now := "" // the session the chat is bound to, as folded so far
	for _, r := range rs {
		if r.Type != schema.TypeGatewaySessionBound {
			continue
		}
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return nil, nil, &events.CorruptEventError{Stream: r.Stream, Revision: r.Revision, Position: r.Position, Err: err}
		}
		b := p.(schema.GatewaySessionBound)
		ever[b.SessionID] = true
		at := slices.IndexFunc(list, func(cv conversation) bool { return cv.id == b.SessionID })
		if at < 0 && slices.Contains(continuing, b.Reason) {
			at = slices.IndexFunc(list, func(cv conversation) bool { return cv.id == now })
		}
		if at >= 0 {
			list = slices.Delete(list, at, at+1)
		}
		list = append(list, conversation{id: b.SessionID, at: r.Time})
		now = b.SessionID
	}
	slices.Reverse(list)
	return list, ever, nil
}

// summary is what /sessions says of a conversation.
type summary struct {
	title, first string
	messages     int
	last         time.Time
}

// summarise reads the conversation session id ends (through the sessions
// it continued) for its title, first message, messages and last activity.
func summarise(ctx context.Context, store events.Store, id string) (summary, error) {
	var s summary
	var firstAt, titleAt uint64
	_, err := session.Conversation(ctx, store, id, func(r events.Recorded) error {
		if r.Time.After(s.last) {
			s.last = r.Time
		}
		switch r.Type {
		case schema.TypeUserMessageAdded:
			s.messages++
			if firstAt != 0 && r.Position > firstAt {
				return nil
			}
			p, err := schema.Decode(r.Envelope)
			if err != nil {
				return err
			}
			s.first, firstAt = p.(schema.UserMessageAdded).Content, r.Position
		case schema.TypeSessionTitled:
			if r.Position < titleAt {
				return nil
			}
			p, err := schema.Decode(r.Envelope)
			if err != nil {
				return err
			}
			s.title, titleAt = p.(schema.SessionTitled).Title, r.Position
		}
		return nil
	})
	return s, err
}

// sessionsCommand is /sessions: the chat's conversations, numbered, the
// latest first; /sessions N is /resume N.
func (c *chat) sessionsCommand(ctx actor.Context, arg string, say func(string) error) error {
	if arg != "" {
		return c.resumeCommand(ctx, arg, say)
	}
	bg := context.Background()
	list, _, err := c.conversations(bg)
	if err != nil {
		return err
	}
	var b strings.Builder
	shown := 0
	for i, cv := range list {
		if shown == listedConversations {
			fmt.Fprintf(&b, "\n… and %d earlier.", len(list)-i)
			break
		}
		s, err := summarise(bg, c.r.store, cv.id)
		if err != nil {
			return err
		}
		if s.messages == 0 && cv.id != c.session {
			continue // never written to: nothing to go back to
		}
		shown++
		name := s.title
		switch {
		case name == "" && s.first != "":
			name = strconv.Quote(clip(oneLine(s.first), 60))
		case name == "":
			name = "(no messages yet)"
		}
		last := s.last
		if last.IsZero() {
			last = cv.at
		}
		fmt.Fprintf(&b, "\n%d. %s — %d message(s), %s · %s", i+1, name, s.messages, ago(c.r.cfg.Now().Sub(last)), shortID(cv.id))
		if cv.id == c.session {
			b.WriteString(" (this one)")
		}
	}
	if shown == 0 {
		return say("No conversations in this chat yet.")
	}
	return say("Conversations in this chat, the latest first:" + b.String() + "\n\n/resume N goes on in number N.")
}

// resumeCommand is /resume N|ID: the chat goes on in one of its own
// conversations, by its number in /sessions, its session id or a unique
// prefix of it. Another chat's session is never found: what does not name
// one of this chat's is answered as unknown, whether it exists or not.
func (c *chat) resumeCommand(ctx actor.Context, arg string, say func(string) error) error {
	if len(strings.Fields(arg)) != 1 {
		return say("Usage: /resume N|ID: a number of /sessions, or a session id (or its start).")
	}
	bg := context.Background()
	list, ever, err := c.conversations(bg)
	if err != nil {
		return err
	}
	id, problem := pickConversation(list, ever, arg)
	if problem != "" {
		return say(problem)
	}
	if id == c.session {
		return say("This chat is in that conversation already.")
	}
	if c.running != nil {
		return say("A task is running: /stop it first.")
	}
	if err := c.bind(ctx, id, "resume"); err != nil {
		return err
	}
	s, err := summarise(bg, c.r.store, id)
	if err != nil {
		return err
	}
	name := s.title
	if name == "" && s.first != "" {
		name = strconv.Quote(clip(oneLine(s.first), 60))
	}
	if name != "" {
		name += ", "
	}
	return say(fmt.Sprintf("Resumed %ssession %s (%d message(s)): your next message goes on in it.", name, id, s.messages))
}

// pickConversation finds what arg names among a chat's conversations:
// number N of list, or a session of ever by its id or a unique prefix of
// it; problem says why none is found.
func pickConversation(list []conversation, ever map[string]bool, arg string) (id, problem string) {
	arg = strings.ToLower(strings.TrimSpace(arg))
	if n, err := strconv.Atoi(arg); err == nil && n >= 1 && n <= len(list) && len(arg) < 4 {
		return list[n-1].id, ""
	}
	if ever[arg] {
		return arg, ""
	}
	var found []string
	if len(arg) >= 4 {
		for s := range ever {
			if strings.HasPrefix(s, arg) {
				found = append(found, s)
			}
		}
	}
	switch len(found) {
	case 1:
		return found[0], ""
	case 0:
		return "", fmt.Sprintf("No conversation of this chat is %q: /sessions lists them.", arg)
	}
	return "", fmt.Sprintf("%q starts %d of this chat's sessions: give more of the id.", arg, len(found))
}

// branchCommand is /branch [TITLE]: the chat goes on in a fork of its
// conversation as it is now; the original stays, to /resume.
func (c *chat) branchCommand(ctx actor.Context, arg string, say func(string) error) error {
	if c.running != nil {
		return say("A task is running: /stop it first.")
	}
	bg := context.Background()
	var rs []events.Recorded
	if c.session != "" {
		var err error
		if rs, err = c.r.store.ReadStream(bg, events.SessionStream(c.session), events.Backward, events.End, 1); err != nil {
			return err
		}
	}
	if len(rs) == 0 {
		return say("No conversation yet.")
	}
	prev := c.session
	fork, err := session.Fork(bg, c.r.store, prev, rs[0].Revision)
	if err != nil {
		return say("Could not branch: " + sentence(err.Error()))
	}
	title := arg
	if title == "" {
		if t, err := sessionTitle(bg, c.r.store, prev); err == nil && t != "" {
			title = t + " (branch)"
		}
	}
	if err := c.bind(ctx, fork, "branch"); err != nil {
		return err
	}
	note := ""
	if title != "" {
		rt, ok := c.r.Sessions.(interface {
			Retitle(ctx context.Context, id, title string) error
		})
		switch {
		case !ok:
			note = " (titles cannot be set from a chat here)"
		case rt.Retitle(bg, fork, title) != nil:
			note = " (the title could not be set)"
		default:
			note = ", titled " + strconv.Quote(title)
		}
	}
	return say(fmt.Sprintf("Branched: this chat goes on in session %s%s; the original %s stays as it was (/resume %s goes back).",
		fork, note, prev, shortID(prev)))
}

// shortID is the start of a session id, enough to /resume it.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// ago says how long ago d was, as a chat reads it.
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%d days ago", int(d/(24*time.Hour)))
}
