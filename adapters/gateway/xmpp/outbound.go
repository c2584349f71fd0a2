package xmpp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/schema"
)

// errOffline is Send's answer while the connection is down: the gateway
// retries, and the reconnect loop brings the connection back.
var errOffline = errors.New("xmpp: not connected")

// Send delivers one outbound message: reply, notice and approval become
// plain-text messages (Markdown left as written, which reads well as
// text), cut at MaxMessage characters; typing becomes a XEP-0085
// "composing" chat state; deltas are dropped — the whole answer arrives as
// a reply. A chat that is one of the rooms gets groupchat messages, any
// other chat (a bare JID) chat messages. It returns the ids of the
// messages written.
func (a *Adapter) Send(ctx context.Context, out schema.Outbound) ([]string, error) {
	to := strings.ToLower(out.Chat)
	l, d, res := splitJID(to)
	if l == "" || d == "" || res != "" {
		return nil, &gw.PermanentError{Err: fmt.Errorf("xmpp: %q is not a bare JID", out.Chat)}
	}
	typ := "chat"
	if a.rooms[to] {
		typ = "groupchat"
	}
	switch out.Kind {
	case schema.OutboundDelta:
		return nil, nil
	case schema.OutboundTyping:
		_, err := a.write("<message to='" + escape(to) + "' type='" + typ + "'><composing xmlns='http://jabber.org/protocol/chatstates'/></message>")
		return nil, err
	case schema.OutboundReply, schema.OutboundNotice, schema.OutboundApproval:
		return a.sendText(ctx, out, to, typ)
	}
	return nil, &gw.PermanentError{Err: fmt.Errorf("xmpp: unknown outbound kind %q", out.Kind)}
}

func (a *Adapter) sendText(ctx context.Context, out schema.Outbound, to, typ string) ([]string, error) {
	text := out.Text
	if out.Kind == schema.OutboundApproval && len(out.Choices) > 0 && !strings.Contains(text, "/approve") {
		// A question with choices: no buttons here, so list them.
		text += "\n\nReply with one of: " + strings.Join(out.Choices, ", ")
	}
	parts := Split(text, a.cfg.MaxMessage)
	if len(parts) == 0 {
		return nil, &gw.PermanentError{Err: errors.New("xmpp: an empty message cannot be sent")}
	}
	a.mu.Lock()
	ids := append([]string(nil), a.sent[out.ReplyID]...)
	a.mu.Unlock()
	for i := len(ids); i < len(parts); i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		id := uuid.NewString()
		stanza := "<message to='" + escape(to) + "' type='" + typ + "' id='" + id + "'><body>" + escape(parts[i]) +
			"</body><active xmlns='http://jabber.org/protocol/chatstates'/><origin-id xmlns='urn:xmpp:sid:0' id='" + id + "'/></message>"
		if _, err := a.write(stanza); err != nil {
			if out.ReplyID != "" && len(ids) > 0 {
				a.mu.Lock()
				a.sent[out.ReplyID] = ids
				a.mu.Unlock()
			}
			return nil, err
		}
		ids = append(ids, id)
	}
	if out.ReplyID != "" {
		a.mu.Lock()
		delete(a.sent, out.ReplyID)
		a.mu.Unlock()
	}
	return ids, nil
}

// write sends one stanza on the current connection.
func (a *Adapter) write(stanza string) (int, error) {
	a.mu.Lock()
	c := a.client
	a.mu.Unlock()
	if c == nil || !a.connected.Load() {
		return 0, errOffline
	}
	n, err := c.SendOrg(stanza)
	if err != nil {
		return n, fmt.Errorf("xmpp send: %w", err)
	}
	return n, nil
}
