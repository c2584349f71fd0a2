package telegram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mymmrac/telego"
	tu "github.com/mymmrac/telego/telegoutil"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/schema"
)

// What a reply carries besides text: files its answer names as
// MEDIA:<path> (upstream's convention: text_to_speech and image_generate
// answer with one, and the model passes it on) are sent as a voice note
// (Ogg/Opus), an audio file, a photo or a document, and the tag is taken
// out of the text; and, when VoiceReplies is set, the answer to a voice
// memo is spoken back as a voice note before its text. Only files under
// MediaRoots are sent: a path the model wrote is not a way to read the
// host's files into a chat.

// maxVoiceIn bounds the voice memos remembered for VoiceReplies.
const maxVoiceIn = 1024

// allowedMedia resolves p and says whether it may be sent
// (gateway.AllowedMedia under MediaRoots).
func (a *Adapter) allowedMedia(p string) (string, error) { return gw.AllowedMedia(a.cfg.MediaRoots, p) }

// sendReply sends a reply: its media, its voice note, then its text. A
// retry after a failure sends only what had not gone (the media and the
// voice note are counted in sentMedia, the text's parts in sent).
func (a *Adapter) sendReply(ctx context.Context, out schema.Outbound, chat telego.ChatID, thread int) ([]string, error) {
	text, items := a.replyItems(ctx, out, chat, thread)
	ids, err := a.sendItems(out, chat, items)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(text) != "" || len(items) == 0 {
		o := out
		o.Text = text
		more, err := a.sendText(ctx, o, chat, thread)
		if err != nil {
			return nil, err
		}
		ids = append(ids, more...)
	}
	a.mu.Lock()
	delete(a.sentMedia, out.ReplyID)
	a.mu.Unlock()
	return ids, nil
}

// replyItem sends one file or voice note of a reply (nil, nil: nothing
// was sent, and that is no failure).
type replyItem func() (*telego.Message, error)

// replyItems splits a reply into its text (with a note for each file that
// may not be sent) and what goes beside it: its MEDIA: files and, when it
// answers a voice message, its voice note.
func (a *Adapter) replyItems(ctx context.Context, out schema.Outbound, chat telego.ChatID, thread int) (string, []replyItem) {
	text, paths := gw.SplitMedia(out.Text)
	var notes []string
	var items []replyItem
	for _, p := range paths {
		real, err := a.allowedMedia(p)
		if err != nil {
			a.log.Warn().Err(err).Msg("media not sent")
			notes = append(notes, fmt.Sprintf("(%s was not sent: %v)", filepath.Base(p), err))
			continue
		}
		items = append(items, func() (*telego.Message, error) { return a.sendFile(ctx, chat, thread, real) })
	}
	if a.cfg.Speak != nil && a.cfg.VoiceReplies && a.wasVoice(out.InReplyTo) && strings.TrimSpace(text) != "" {
		spoken := text
		items = append(items, func() (*telego.Message, error) {
			audio, err := a.cfg.Speak(ctx, spoken)
			if err != nil {
				// The text still goes: the voice note is extra.
				a.log.Warn().Err(err).Msg("voice reply not spoken")
				return nil, nil
			}
			return a.sendVoice(ctx, chat, thread, audio, "reply.ogg")
		})
	}
	if len(notes) > 0 {
		text = strings.TrimSpace(text + "\n\n" + strings.Join(notes, "\n"))
	}
	return text, items
}

// sendItems sends a reply's files and voice note, from the first not sent
// by an earlier attempt (counted in sentMedia, which the caller clears
// once the whole reply went).
func (a *Adapter) sendItems(out schema.Outbound, chat telego.ChatID, items []replyItem) ([]string, error) {
	a.mu.Lock()
	done := a.sentMedia[out.ReplyID]
	a.mu.Unlock()
	var ids []string
	for i := done; i < len(items); i++ {
		msg, err := items[i]()
		if err != nil {
			var perm *gw.PermanentError
			a.mu.Lock()
			if out.ReplyID != "" && !errors.As(err, &perm) {
				a.sentMedia[out.ReplyID] = i
			}
			a.mu.Unlock()
			return nil, err
		}
		if msg != nil {
			ids = append(ids, messageID(chat.ID, msg.MessageID))
		}
		if out.ReplyID != "" {
			a.mu.Lock()
			a.sentMedia[out.ReplyID] = i + 1
			a.mu.Unlock()
		}
	}
	return ids, nil
}

// sendFile sends the file at path by its kind: Ogg as a voice note, other
// audio as audio, images as a photo, anything else as a document.
func (a *Adapter) sendFile(ctx context.Context, chat telego.ChatID, thread int, path string) (*telego.Message, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &gw.PermanentError{Err: err}
	}
	name := filepath.Base(path)
	f := tu.File(tu.NameReader(bytes.NewReader(data), name))
	cctx, cancel := context.WithTimeout(ctx, 2*callTimeout)
	defer cancel()
	var msg *telego.Message
	switch strings.ToLower(filepath.Ext(name)) {
	case ".ogg", ".oga", ".opus":
		return a.sendVoice(ctx, chat, thread, data, name)
	case ".mp3", ".m4a", ".wav", ".flac":
		msg, err = a.bot.SendAudio(cctx, &telego.SendAudioParams{ChatID: chat, MessageThreadID: thread, Audio: f})
	case ".png", ".jpg", ".jpeg", ".webp", ".gif":
		msg, err = a.bot.SendPhoto(cctx, &telego.SendPhotoParams{ChatID: chat, MessageThreadID: thread, Photo: f})
	default:
		msg, err = a.bot.SendDocument(cctx, &telego.SendDocumentParams{ChatID: chat, MessageThreadID: thread, Document: f})
	}
	if err != nil {
		return nil, a.classify(err)
	}
	return msg, nil
}

func (a *Adapter) sendVoice(ctx context.Context, chat telego.ChatID, thread int, audio []byte, name string) (*telego.Message, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*callTimeout)
	defer cancel()
	msg, err := a.bot.SendVoice(cctx, &telego.SendVoiceParams{ChatID: chat, MessageThreadID: thread,
		Voice: tu.File(tu.NameReader(bytes.NewReader(audio), name))})
	if err != nil {
		return nil, a.classify(err)
	}
	return msg, nil
}

// heardVoice remembers that message id ("chat:message") was a voice memo.
func (a *Adapter) heardVoice(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.voiceIn[id]; ok {
		return
	}
	a.voiceIn[id] = struct{}{}
	a.voiceOrder = append(a.voiceOrder, id)
	for len(a.voiceOrder) > maxVoiceIn {
		delete(a.voiceIn, a.voiceOrder[0])
		a.voiceOrder = a.voiceOrder[1:]
	}
}

func (a *Adapter) wasVoice(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.voiceIn[id]
	return ok
}

// SendsMedia reports that Telegram delivers a reply's MEDIA: files itself
// (gateway.MediaSender).
func (a *Adapter) SendsMedia() bool { return true }
