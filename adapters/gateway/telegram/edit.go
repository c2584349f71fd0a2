package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/mymmrac/telego"
	ta "github.com/mymmrac/telego/telegoapi"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/schema"
)

// Edit shows out in the messages ids with editMessageText (gateway.Editor):
// a streamed answer's preview, a turn's progress lines, and the answer that
// replaces its preview. The text is cut and rendered as a reply's is; parts
// beyond ids are sent as new messages. An answer's files and voice note
// are sent after its text; an answer that is files only is sent, not
// edited in (gateway.ErrNoEdit).
func (a *Adapter) Edit(ctx context.Context, out schema.Outbound, ids []string) ([]string, error) {
	chat, err := chatID(out.Chat)
	if err != nil {
		return nil, &gw.PermanentError{Err: err}
	}
	thread, _ := strconv.Atoi(out.Thread)
	if out.Kind != schema.OutboundReply {
		return a.editText(ctx, out, chat, thread, ids)
	}
	text, items := a.replyItems(ctx, out, chat, thread)
	if strings.TrimSpace(text) == "" {
		return nil, gw.ErrNoEdit
	}
	o := out
	o.Text = text
	got, err := a.editText(ctx, o, chat, thread, ids)
	if err != nil {
		return nil, err
	}
	more, err := a.sendItems(out, chat, items)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	delete(a.sentMedia, out.ReplyID)
	a.mu.Unlock()
	return append(got, more...), nil
}

// editText is Edit for text alone.
func (a *Adapter) editText(ctx context.Context, out schema.Outbound, chat telego.ChatID, thread int, ids []string) ([]string, error) {
	parts := gw.Splitter{Limit: MaxMessage, Measure: gw.UTF16, Fences: true, Escape: true}.Split(out.Text)
	if len(parts) == 0 {
		return nil, &gw.PermanentError{Err: errors.New("telegram: an empty message cannot be shown")}
	}
	if out.ReplyID != "" {
		// A retry after a failure: the parts sent then are edited, not
		// sent again.
		a.mu.Lock()
		if prior := a.sent[out.ReplyID]; len(prior) > len(ids) {
			ids = prior
		}
		a.mu.Unlock()
	}
	var got []string
	for i, part := range parts {
		if i < len(ids) {
			if err := a.editMessage(ctx, ids[i], part); err != nil {
				return nil, a.keepSent(out.ReplyID, got, err)
			}
			got = append(got, ids[i])
			continue
		}
		p := &telego.SendMessageParams{ChatID: chat, MessageThreadID: thread, Text: HTML(part), ParseMode: telego.ModeHTML}
		if c, m, ok := strings.Cut(out.InReplyTo, ":"); ok && c == out.Chat && i == 0 {
			if replyTo, _ := strconv.Atoi(m); replyTo > 0 {
				p.ReplyParameters = &telego.ReplyParameters{MessageID: replyTo, ChatID: chat, AllowSendingWithoutReply: true}
			}
		}
		msg, err := a.sendMessage(ctx, p, part)
		if err != nil {
			return nil, a.keepSent(out.ReplyID, got, err)
		}
		c := msg.Chat.ID
		if c == 0 {
			c = chat.ID
		}
		got = append(got, messageID(c, msg.MessageID))
	}
	if out.ReplyID != "" {
		a.mu.Lock()
		delete(a.sent, out.ReplyID)
		a.mu.Unlock()
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

// editMessage makes message id ("chat:message") read the Markdown part, as
// HTML, or as plain text when Telegram cannot parse the HTML. Text equal
// to what the message reads already is no failure.
func (a *Adapter) editMessage(ctx context.Context, id, part string) error {
	c, m, ok := strings.Cut(id, ":")
	chat, err1 := strconv.ParseInt(c, 10, 64)
	msg, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil {
		return &gw.PermanentError{Err: fmt.Errorf("telegram: %q is not a message id", id)}
	}
	p := &telego.EditMessageTextParams{ChatID: telego.ChatID{ID: chat}, MessageID: msg, Text: HTML(part), ParseMode: telego.ModeHTML}
	err := a.edit(ctx, p)
	if apiError(err, "can't parse entities") {
		a.log.Warn().Err(err).Msg("telegram refused the HTML: editing in plain text")
		p.Text, p.ParseMode = part, ""
		err = a.edit(ctx, p)
	}
	if apiError(err, "message is not modified") {
		return nil
	}
	return a.classify(err)
}

func (a *Adapter) edit(ctx context.Context, p *telego.EditMessageTextParams) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := a.bot.EditMessageText(cctx, p)
	return err
}

// apiError reports whether err is the Bot API's 400 saying what.
func apiError(err error, what string) bool {
	var api *ta.Error
	return err != nil && errors.As(err, &api) && api.ErrorCode == http.StatusBadRequest && strings.Contains(strings.ToLower(api.Description), what)
}
