package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/slack-go/slack"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/schema"
)

// Edit shows out in the messages ids ("channel:ts") with chat.update
// (gateway.Editor): a streamed answer's preview, a turn's progress lines,
// and the answer that replaces its preview. The text is cut and converted
// as a reply's is; parts beyond ids are posted as new messages in the
// thread. An answer's MEDIA: files are uploaded after its text; an answer
// that is files alone is not edited in (gateway.ErrNoEdit: Send sends it).
func (a *Adapter) Edit(ctx context.Context, out schema.Outbound, ids []string) ([]string, error) {
	if out.Chat == "" {
		return nil, &gw.PermanentError{Err: errors.New("slack: a message without a channel")}
	}
	text, files := out.Text, []string(nil)
	if out.Kind == schema.OutboundReply {
		text, files = a.mediaOf(out.Text)
		if strings.TrimSpace(text) == "" && len(files) > 0 {
			return nil, gw.ErrNoEdit
		}
		if got, ok := a.wasDelivered(out.ReplyID); ok && len(files) > 0 {
			return got, nil
		}
	}
	parts := Parts(text, MaxMessage)
	if len(parts) == 0 {
		return nil, &gw.PermanentError{Err: errors.New("slack: an empty message cannot be shown")}
	}
	if out.ReplyID != "" {
		// A retry after a failure: the parts posted then are updated,
		// not posted again.
		a.mu.Lock()
		if prior := a.sent[out.ReplyID]; len(prior) > len(ids) {
			ids = prior
		}
		a.mu.Unlock()
	}
	var got []string
	for i, part := range parts {
		if i < len(ids) {
			ch, ts, ok := strings.Cut(ids[i], ":")
			if !ok || ch == "" || ts == "" {
				return nil, &gw.PermanentError{Err: fmt.Errorf("slack: %q is not a message id", ids[i])}
			}
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			_, _, _, err := a.api.UpdateMessageContext(cctx, ch, ts, slack.MsgOptionText(part, false))
			cancel()
			if err != nil {
				return nil, a.keepSent(out.ReplyID, got, a.classify(err))
			}
			got = append(got, ids[i])
			continue
		}
		opts := []slack.MsgOption{slack.MsgOptionText(part, false)}
		if out.Thread != "" {
			opts = append(opts, slack.MsgOptionTS(out.Thread))
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		ch, ts, err := a.api.PostMessageContext(cctx, out.Chat, opts...)
		cancel()
		if err != nil {
			return nil, a.keepSent(out.ReplyID, got, a.classify(err))
		}
		if ch == "" {
			ch = out.Chat
		}
		got = append(got, ch+":"+ts)
	}
	if out.ReplyID != "" {
		a.mu.Lock()
		if len(files) > 0 {
			a.sent[out.ReplyID] = got // a retry after a failed upload posts none again
		} else {
			delete(a.sent, out.ReplyID)
		}
		a.mu.Unlock()
	}
	a.rememberThread(out.Chat, out.Thread)
	if err := a.upload(ctx, out, files, got, true); err != nil {
		return nil, err
	}
	if out.Kind == schema.OutboundReply {
		a.answered(out) // an answer that replaced its preview
	}
	return got, nil
}

// keepSent remembers the parts of reply shown before err, for the retry.
func (a *Adapter) keepSent(reply string, got []string, err error) error {
	var perm *gw.PermanentError
	if reply != "" && len(got) > 0 && !errors.As(err, &perm) {
		a.mu.Lock()
		a.sent[reply] = got
		a.mu.Unlock()
	}
	return err
}
