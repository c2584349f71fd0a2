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

// Send delivers one outbound message: reply, notice and approval become
// chat.postMessage calls (Markdown turned into mrkdwn, cut into parts of at
// most MaxMessage characters, posted in the message's thread; an
// approval's last part carries its choices as Block Kit buttons); the
// files its MEDIA: tags name are uploaded after the text, in its thread.
// The Web API has no typing indicator for bots: typing puts an "eyes"
// reaction on the message being answered instead, which the delivered
// answer takes off (react.go). Deltas are dropped: the whole answer
// arrives as a reply. It returns the ids ("channel:ts") of the messages
// posted.
func (a *Adapter) Send(ctx context.Context, out schema.Outbound) ([]string, error) {
	switch out.Kind {
	case schema.OutboundTyping:
		a.acknowledge(ctx, out)
		return nil, nil
	case schema.OutboundDelta:
		return nil, nil
	case schema.OutboundReply, schema.OutboundNotice, schema.OutboundApproval:
		if out.Chat == "" {
			return nil, &gw.PermanentError{Err: errors.New("slack: a message without a channel")}
		}
		text, files := a.mediaOf(out.Text)
		if ids, ok := a.wasDelivered(out.ReplyID); ok && len(files) > 0 {
			return ids, nil
		}
		var ids []string
		if strings.TrimSpace(text) != "" || len(files) == 0 {
			o := out
			o.Text = text
			got, err := a.post(ctx, o, len(files) > 0)
			if err != nil {
				return nil, err
			}
			ids = got
		}
		if err := a.upload(ctx, out, files, ids, false); err != nil {
			return nil, err
		}
		a.answered(out)
		return ids, nil
	}
	return nil, &gw.PermanentError{Err: fmt.Errorf("slack: unknown outbound kind %q", out.Kind)}
}

// post posts out's text; more says files follow, and the parts posted are
// kept in sent until they went too (a retry posts none of them again).
func (a *Adapter) post(ctx context.Context, out schema.Outbound, more bool) ([]string, error) {
	if out.Chat == "" {
		return nil, &gw.PermanentError{Err: errors.New("slack: a message without a channel")}
	}
	parts := Parts(out.Text, MaxMessage)
	if len(parts) == 0 {
		return nil, &gw.PermanentError{Err: errors.New("slack: an empty message cannot be sent")}
	}
	a.mu.Lock()
	ids := append([]string(nil), a.sent[out.ReplyID]...)
	a.mu.Unlock()
	for i := len(ids); i < len(parts); i++ {
		opts := []slack.MsgOption{slack.MsgOptionText(parts[i], false)}
		if out.Thread != "" {
			opts = append(opts, slack.MsgOptionTS(out.Thread))
		}
		if out.Kind == schema.OutboundApproval && len(out.Choices) > 0 && i == len(parts)-1 {
			if blocks := approvalBlocks(parts[i], out.Key, out.Choices); blocks != nil {
				opts = append(opts, slack.MsgOptionBlocks(blocks...))
			}
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		ch, ts, err := a.api.PostMessageContext(cctx, out.Chat, opts...)
		cancel()
		if err != nil {
			err = a.classify(err)
			var perm *gw.PermanentError
			a.mu.Lock()
			if out.ReplyID != "" && len(ids) > 0 && !errors.As(err, &perm) {
				a.sent[out.ReplyID] = ids // Served tries again: the rest only
			} else {
				delete(a.sent, out.ReplyID)
			}
			a.mu.Unlock()
			return nil, err
		}
		if ch == "" {
			ch = out.Chat
		}
		ids = append(ids, ch+":"+ts)
	}
	a.mu.Lock()
	if more && out.ReplyID != "" {
		a.sent[out.ReplyID] = ids
	} else {
		delete(a.sent, out.ReplyID)
	}
	a.mu.Unlock()
	a.rememberThread(out.Chat, out.Thread)
	return ids, nil
}

// approvalBlocks lays out an approval: its text as a section, its choices
// as buttons in an actions block whose id names the router's chat. nil
// when the key does not fit a block id (the text still says how to answer
// with /approve or /deny).
func approvalBlocks(text, key string, choices []string) []slack.Block {
	if len(blockPrefix+key) > maxBlockID || key == "" {
		return nil
	}
	var buttons []slack.BlockElement
	for _, c := range choices {
		b := slack.NewButtonBlockElement(actionPrefix+c, "approval:"+c, slack.NewTextBlockObject(slack.PlainTextType, label(c), false, false))
		switch c {
		case "once":
			b.Style = slack.StylePrimary
		case "deny":
			b.Style = slack.StyleDanger
		}
		buttons = append(buttons, b)
	}
	return []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil),
		slack.NewActionBlock(blockPrefix+key, buttons...),
	}
}

func label(choice string) string {
	switch choice {
	case "once":
		return "Approve once"
	case "session":
		return "Approve for this session"
	case "always":
		return "Always approve"
	case "deny":
		return "Deny"
	}
	return choice
}
