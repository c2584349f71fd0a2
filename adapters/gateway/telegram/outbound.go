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

// Send delivers one outbound message: a reply's MEDIA:<path> files go
// first (media.go), then reply, notice and approval become
// messages (cut at MaxMessage, rendered as HTML, the first part replying to
// the message answered, an approval's last part carrying its choices as
// buttons), typing becomes a chat action, and deltas are dropped — the
// whole answer arrives as a reply. It returns the ids ("chat:message") of
// the messages sent.
func (a *Adapter) Send(ctx context.Context, out schema.Outbound) ([]string, error) {
	chat, err := chatID(out.Chat)
	if err != nil {
		return nil, &gw.PermanentError{Err: err}
	}
	thread, _ := strconv.Atoi(out.Thread)
	switch out.Kind {
	case schema.OutboundDelta:
		return nil, nil
	case schema.OutboundTyping:
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		err := a.bot.SendChatAction(cctx, &telego.SendChatActionParams{ChatID: chat, MessageThreadID: thread, Action: telego.ChatActionTyping})
		return nil, a.classify(err)
	case schema.OutboundReply:
		return a.sendReply(ctx, out, chat, thread)
	case schema.OutboundNotice, schema.OutboundApproval:
		return a.sendText(ctx, out, chat, thread)
	}
	return nil, &gw.PermanentError{Err: fmt.Errorf("telegram: unknown outbound kind %q", out.Kind)}
}

func chatID(s string) (telego.ChatID, error) {
	if id, err := strconv.ParseInt(s, 10, 64); err == nil {
		return telego.ChatID{ID: id}, nil
	}
	if strings.HasPrefix(s, "@") && len(s) > 1 {
		return telego.ChatID{Username: s}, nil
	}
	return telego.ChatID{}, fmt.Errorf("telegram: %q is not a chat id", s)
}

func (a *Adapter) sendText(ctx context.Context, out schema.Outbound, chat telego.ChatID, thread int) ([]string, error) {
	parts := gw.Splitter{Limit: MaxMessage, Measure: gw.UTF16, Fences: true, Escape: true}.Split(out.Text)
	if len(parts) == 0 {
		return nil, &gw.PermanentError{Err: errors.New("telegram: an empty message cannot be sent")}
	}
	replyTo := 0
	if c, m, ok := strings.Cut(out.InReplyTo, ":"); ok && c == out.Chat {
		replyTo, _ = strconv.Atoi(m)
	}
	a.mu.Lock()
	ids := append([]string(nil), a.sent[out.ReplyID]...)
	a.mu.Unlock()
	for i := len(ids); i < len(parts); i++ {
		p := &telego.SendMessageParams{ChatID: chat, MessageThreadID: thread, Text: HTML(parts[i]), ParseMode: telego.ModeHTML}
		if i == 0 && replyTo > 0 {
			// Sent even if the message answered was deleted meanwhile. The
			// chat is named: left zero, the library would send "" for it.
			p.ReplyParameters = &telego.ReplyParameters{MessageID: replyTo, ChatID: chat, AllowSendingWithoutReply: true}
		}
		keyboard := out.Kind == schema.OutboundApproval && len(out.Choices) > 0 && i == len(parts)-1
		if keyboard {
			p.ReplyMarkup = buttons(out.Choices)
		}
		msg, err := a.sendMessage(ctx, p, parts[i])
		if err != nil {
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
		id := messageID(msg.Chat.ID, msg.MessageID)
		if msg.Chat.ID == 0 {
			id = messageID(chat.ID, msg.MessageID)
		}
		ids = append(ids, id)
		if keyboard {
			a.remember(id, out.Key)
		}
	}
	a.mu.Lock()
	delete(a.sent, out.ReplyID)
	a.mu.Unlock()
	return ids, nil
}

// sendMessage sends p; when Telegram cannot parse the HTML, it sends the
// part's Markdown as plain text instead.
func (a *Adapter) sendMessage(ctx context.Context, p *telego.SendMessageParams, plain string) (*telego.Message, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	msg, err := a.bot.SendMessage(cctx, p)
	cancel()
	var api *ta.Error
	if err != nil && errors.As(err, &api) && api.ErrorCode == http.StatusBadRequest && strings.Contains(strings.ToLower(api.Description), "can't parse entities") {
		a.log.Warn().Str("error", api.Description).Msg("telegram refused the HTML: sending plain text")
		q := *p
		q.Text, q.ParseMode = plain, ""
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		msg, err = a.bot.SendMessage(cctx, &q)
		cancel()
	}
	if err != nil {
		return nil, a.classify(err)
	}
	return msg, nil
}

// buttons lays out an approval's choices, two to a row.
func buttons(choices []string) *telego.InlineKeyboardMarkup {
	var rows [][]telego.InlineKeyboardButton
	for i, c := range choices {
		data := "approval:" + c
		if len(data) > 64 { // the Bot API's limit on callback data
			data = data[:64]
		}
		b := telego.InlineKeyboardButton{Text: label(c), CallbackData: data}
		if i%2 == 0 {
			rows = append(rows, []telego.InlineKeyboardButton{b})
		} else {
			rows[len(rows)-1] = append(rows[len(rows)-1], b)
		}
	}
	return &telego.InlineKeyboardMarkup{InlineKeyboard: rows}
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

// remember keeps which router chat an approval message belongs to, for
// the callbacks of its buttons; the oldest are forgotten first.
func (a *Adapter) remember(msg, key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.buttons[msg]; !ok {
		a.buttonOrder = append(a.buttonOrder, msg)
	}
	a.buttons[msg] = key
	for len(a.buttonOrder) > maxButtons {
		delete(a.buttons, a.buttonOrder[0])
		a.buttonOrder = a.buttonOrder[1:]
	}
}
