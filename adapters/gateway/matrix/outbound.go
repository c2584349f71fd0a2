package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/format"
	"maunium.net/go/mautrix/id"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/schema"
)

// typingFor is how long a typing notice lasts; the router repeats it
// every few seconds while a turn runs.
const typingFor = 6 * time.Second

// Send delivers one outbound message: reply and approval become m.text
// messages, notice m.notice (cut at MaxMessage, Markdown rendered to HTML
// with the Markdown as the plain body, the first part replying to the
// message answered, all of them in the thread answered), typing becomes a
// typing notice, and deltas are dropped — the whole answer arrives as a
// reply. An approval is answered by a reply ("/approve", "/deny"), which
// the router takes only from the session's user. It returns the event ids
// of the messages sent.
func (a *Adapter) Send(ctx context.Context, out schema.Outbound) ([]string, error) {
	out = target(out)
	a.cred.RLock()
	defer a.cred.RUnlock()
	room := id.RoomID(out.Chat)
	if !strings.HasPrefix(out.Chat, "!") || !strings.Contains(out.Chat, ":") {
		return nil, &gw.PermanentError{Err: fmt.Errorf("matrix: %q is not a room id (!room:server)", out.Chat)}
	}
	switch out.Kind {
	case schema.OutboundDelta:
		return nil, nil
	case schema.OutboundTyping:
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		_, err := a.cli.UserTyping(cctx, room, true, typingFor)
		return nil, a.tokenRevoked(classify(err))
	case schema.OutboundReply, schema.OutboundNotice, schema.OutboundApproval:
		return a.sendText(ctx, out, room)
	}
	return nil, &gw.PermanentError{Err: fmt.Errorf("matrix: unknown outbound kind %q", out.Kind)}
}

// target mends a delivery target written PLATFORM:CHAT[:THREAD] (cron's
// --deliver matrix:!room:server): the room id's own colon put its server
// name in Thread. Thread ids are event ids, which start with $.
func target(out schema.Outbound) schema.Outbound {
	if !strings.Contains(out.Chat, ":") && out.Thread != "" && !strings.HasPrefix(out.Thread, "$") {
		out.Chat, out.Thread = out.Chat+":"+out.Thread, ""
	}
	return out
}

func (a *Adapter) sendText(ctx context.Context, out schema.Outbound, room id.RoomID) ([]string, error) {
	msgType := event.MsgText
	if out.Kind == schema.OutboundNotice {
		msgType = event.MsgNotice
	}
	var contents []*event.MessageEventContent
	for _, p := range Split(out.Text) {
		contents = append(contents, render(p, msgType))
	}
	if len(contents) == 0 {
		return nil, &gw.PermanentError{Err: errors.New("matrix: an empty message cannot be sent")}
	}
	thread := id.EventID(out.Thread)
	var ids []string
	for i, c := range contents {
		relate(c, out, i, ids)
		req := mautrix.ReqSendEvent{}
		if out.ReplyID != "" {
			// The same transaction id for the same part: a send retried
			// after a lost answer is not shown twice.
			req.TransactionID = fmt.Sprintf("hermes.%s.%d", out.ReplyID, i)
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		resp, err := a.cli.SendMessageEvent(cctx, room, event.EventMessage, c, req)
		cancel()
		if err != nil {
			return nil, a.tokenRevoked(classify(err))
		}
		ids = append(ids, string(resp.EventID))
		a.remember(resp.EventID, thread)
	}
	return ids, nil
}

// relate places part i of out: in out's thread, the first part replying to
// the message answered; ids are the parts sent before it.
func relate(c *event.MessageEventContent, out schema.Outbound, i int, ids []string) {
	thread := id.EventID(out.Thread)
	replyTo := id.EventID(out.InReplyTo)
	switch {
	case thread != "" && i == 0 && replyTo != "":
		c.RelatesTo = &event.RelatesTo{Type: event.RelThread, EventID: thread, InReplyTo: &event.InReplyTo{EventID: replyTo}}
	case thread != "":
		// Clients without threads show the part as a reply to the
		// one before it.
		last := thread
		if len(ids) > 0 {
			last = id.EventID(ids[len(ids)-1])
		}
		c.RelatesTo = (&event.RelatesTo{}).SetThread(thread, last)
	case i == 0 && replyTo != "":
		c.RelatesTo = (&event.RelatesTo{}).SetReplyTo(replyTo)
	}
}

// render makes a message of Markdown: the HTML (org.matrix.custom.html)
// in formatted_body, the Markdown itself as the plain body. Raw HTML in
// the Markdown is shown as text, not passed on.
func render(md string, msgType event.MessageType) *event.MessageEventContent {
	c := &event.MessageEventContent{MsgType: msgType, Body: md, Mentions: &event.Mentions{}}
	html := format.RenderMarkdown(md, true, false)
	if html.Format == event.FormatHTML && html.FormattedBody != "" {
		c.Format, c.FormattedBody = event.FormatHTML, html.FormattedBody
	}
	return c
}

// Split cuts Markdown into the parts of a long answer: at most MaxMessage
// UTF-16 code units each (at a paragraph, a line, the edge of a code
// block, a space, as gateway.Splitter cuts Markdown), and cut again where
// a part's event would pass Matrix's event size limit after rendering.
func Split(md string) []string {
	return splitAt(md, MaxMessage)
}

func splitAt(md string, limit int) []string {
	var out []string
	for _, p := range (gw.Splitter{Limit: limit, Measure: gw.UTF16, Fences: true, Escape: true}).Split(md) {
		if limit > 256 && eventSize(p) > maxEventBytes {
			out = append(out, splitAt(p, limit/2)...)
			continue
		}
		out = append(out, p)
	}
	return out
}

// eventSize is the size of the content a part becomes, as JSON.
func eventSize(md string) int {
	b, err := json.Marshal(render(md, event.MsgText))
	if err != nil {
		return 0
	}
	return len(b)
}
