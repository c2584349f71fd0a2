package matrix

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/schema"
)

// Edit shows out in the messages ids (event ids) with m.replace edits
// (gateway.Editor): a streamed answer's preview, a turn's progress lines
// (as m.notice), and the answer that replaces its preview. The text is cut
// and rendered as a reply's is; parts beyond ids are sent as new messages,
// placed as a reply's parts are. The ids returned are the original events
// (an edit names the event it replaces, never an earlier edit).
func (a *Adapter) Edit(ctx context.Context, out schema.Outbound, ids []string) ([]string, error) {
	out = target(out)
	a.cred.RLock()
	defer a.cred.RUnlock()
	room := id.RoomID(out.Chat)
	if !strings.HasPrefix(out.Chat, "!") || !strings.Contains(out.Chat, ":") {
		return nil, &gw.PermanentError{Err: fmt.Errorf("matrix: %q is not a room id (!room:server)", out.Chat)}
	}
	msgType := event.MsgText
	if out.Kind == schema.OutboundNotice || out.Kind == schema.OutboundProgress {
		msgType = event.MsgNotice
	}
	text, files := out.Text, []string(nil)
	if out.Kind == schema.OutboundReply {
		// The answer's files follow the edited text.
		text, files = a.mediaOf(out.Text)
		if strings.TrimSpace(text) == "" {
			return nil, gw.ErrNoEdit // files alone: sent as new messages
		}
	}
	parts := Split(text)
	if len(parts) == 0 {
		return nil, &gw.PermanentError{Err: errors.New("matrix: an empty message cannot be shown")}
	}
	var got []string
	for i, p := range parts {
		c := render(p, msgType)
		req := mautrix.ReqSendEvent{}
		if i < len(ids) {
			c.SetEdit(id.EventID(ids[i]))
			if out.ReplyID != "" {
				// A retried edit of the answer is the same event.
				req.TransactionID = fmt.Sprintf("hermes.%s.edit.%d", out.ReplyID, i)
			}
		} else {
			relate(c, out, i, got)
			if out.ReplyID != "" {
				req.TransactionID = fmt.Sprintf("hermes.%s.%d", out.ReplyID, i)
			}
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		resp, err := a.cli.SendMessageEvent(cctx, room, event.EventMessage, c, req)
		cancel()
		if err != nil {
			return nil, a.tokenRevoked(classify(err))
		}
		if i < len(ids) {
			got = append(got, ids[i])
			continue
		}
		got = append(got, string(resp.EventID))
		a.remember(resp.EventID, id.EventID(out.Thread))
	}
	more, err := a.sendFiles(ctx, out, room, files)
	return append(got, more...), err
}
