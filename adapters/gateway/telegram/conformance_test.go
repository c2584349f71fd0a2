package telegram_test

import (
	"context"
	"encoding/json"
	"html"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/rs/zerolog"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/conformance"
	"github.com/hermes-go/hermes/adapters/gateway/telegram"
	"github.com/hermes-go/hermes/adapters/gateway/telegram/telegramtest"
)

// The gateway conformance suite against the Telegram adapter talking to
// telegram-test-api.
func TestConformance(t *testing.T) {
	conformance.Run(t, &tgPeer{emu: telegramtest.Start(t)})
}

// tgPeer is telegram-test-api, with users who talk to the bot through its
// client API.
type tgPeer struct {
	emu  *telegramtest.Emulator
	next atomic.Int64
}

func (p *tgPeer) Name() string { return "telegram" }

func (p *tgPeer) Caps() conformance.Caps {
	return conformance.Caps{Limit: 4096, Groups: true, Restart: true}
}

func (p *tgPeer) Users(t testing.TB) conformance.Users {
	n := p.next.Add(1)
	group := telegramtest.Chat{ID: -100000 - n, Type: "group", Title: "team " + strconv.FormatInt(n, 10)}
	user := func(k int64, name string) conformance.User {
		return &tgUser{emu: p.emu, group: group, u: telegramtest.User{ID: 1000*n + k, FirstName: name, Username: strings.ToLower(name) + strconv.FormatInt(n, 10)}}
	}
	return conformance.Users{Alice: user(1, "Alice"), Bob: user(2, "Bob"), Stranger: user(3, "Mallory")}
}

func (p *tgPeer) NewPlatform(t testing.TB) gw.Platform {
	ad, err := telegram.New(telegram.Config{Token: telegramtest.Token, APIURL: p.emu.URL, CacheDir: t.TempDir(),
		PollTimeout: 2 * time.Second, PollInterval: 50 * time.Millisecond, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	return ad
}

func (p *tgPeer) Mention(text string) string { return "@" + telegramtest.BotUsername + " " + text }

// Restart kills the emulator and starts it again on the same port.
func (p *tgPeer) Restart(t testing.TB) { p.emu.Restart(t) }

type tgUser struct {
	emu   *telegramtest.Emulator
	u     telegramtest.User
	group telegramtest.Chat
}

func (u *tgUser) ID() string { return strconv.FormatInt(u.u.ID, 10) }

func (u *tgUser) chat(where conformance.Where) int64 {
	if where == conformance.Group {
		return u.group.ID
	}
	return u.u.ID
}

func (u *tgUser) Send(ctx context.Context, where conformance.Where, text string) error {
	m := telegramtest.DM(u.u, text)
	if where == conformance.Group {
		m = telegramtest.Message{From: u.u, Chat: u.group, Text: text}
	}
	return u.emu.Send(ctx, telegramtest.Token, m)
}

var tags = regexp.MustCompile(`<[^>]*>`)

// Received renders the bot's HTML as a Telegram client shows it.
func (u *tgUser) Received(ctx context.Context, where conformance.Where) ([]conformance.Message, error) {
	ms, err := u.emu.Received(ctx, telegramtest.Token, u.chat(where))
	if err != nil {
		return nil, err
	}
	out := make([]conformance.Message, 0, len(ms))
	for _, m := range ms {
		text := m.Message.Text
		if m.Message.ParseMode == "HTML" {
			text = html.UnescapeString(tags.ReplaceAllString(text, ""))
		}
		cm := conformance.Message{Text: text, Size: len(utf16.Encode([]rune(text))), ID: strconv.Itoa(m.MessageID)}
		if m.Message.ReplyMarkup != nil {
			for _, row := range m.Message.ReplyMarkup.InlineKeyboard {
				for _, b := range row {
					cm.Choices = append(cm.Choices, b.CallbackData)
				}
			}
		}
		out = append(out, cm)
	}
	return out, nil
}

// Answer presses the question's button for choice.
func (u *tgUser) Answer(ctx context.Context, where conformance.Where, q conformance.Message, choice string) error {
	data := "approval:" + choice
	pressable := false
	for _, c := range q.Choices {
		pressable = pressable || c == data
	}
	if !pressable {
		return u.Send(ctx, where, "/approve")
	}
	var bm telegramtest.BotMessage
	bm.MessageID, _ = strconv.Atoi(q.ID)
	bm.Message.ChatID = json.RawMessage(strconv.FormatInt(u.chat(where), 10))
	bm.Message.Text = q.Text
	return u.emu.Press(ctx, telegramtest.Token, u.u, bm, data)
}
