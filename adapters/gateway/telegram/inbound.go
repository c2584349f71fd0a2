package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/mymmrac/telego"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/internal/markdown"
	"github.com/hermes-go/hermes/schema"
)

// maxTries is how often an update whose attachments fail to download is
// tried before it goes through with a note instead of the file.
const maxTries = 5

// inbound maps a message. ok is false for what starts no turn: service
// messages, stickers, messages from bots and from channels.
func (a *Adapter) inbound(ctx context.Context, updateID int, m *telego.Message) (schema.Inbound, bool, error) {
	if m.From == nil || m.From.IsBot {
		return schema.Inbound{}, false, nil
	}
	var chatType string
	switch m.Chat.Type {
	case telego.ChatTypePrivate:
		chatType = "dm"
	case telego.ChatTypeGroup, telego.ChatTypeSupergroup:
		chatType = "group"
	default:
		return schema.Inbound{}, false, nil
	}
	text, entities := m.Text, m.Entities
	if text == "" {
		text, entities = m.Caption, m.CaptionEntities
	}
	atts, notes, err := a.attachments(ctx, updateID, m)
	if err != nil {
		return schema.Inbound{}, false, err
	}
	if strings.TrimSpace(text) == "" && len(notes) == 0 {
		return schema.Inbound{}, false, nil
	}
	// The agent's turn sees only the text: the notes tell the model
	// where the files are (the attachments are also recorded with the
	// message).
	if len(notes) > 0 {
		if text != "" {
			text += "\n\n"
		}
		text += strings.Join(notes, "\n")
	}
	in := schema.Inbound{
		Platform:    Platform,
		Chat:        strconv.FormatInt(m.Chat.ID, 10),
		ChatType:    chatType,
		User:        strconv.FormatInt(m.From.ID, 10),
		UserName:    userName(m.From),
		MessageID:   messageID(m.Chat.ID, m.MessageID),
		Text:        text,
		Attachments: atts,
	}
	if m.MessageThreadID != 0 && (m.IsTopicMessage || m.Chat.IsForum) {
		in.Thread = strconv.Itoa(m.MessageThreadID)
	}
	if chatType == "group" {
		in.Mentioned = a.mentioned(m, text, entities)
	}
	return in, true, nil
}

func userName(u *telego.User) string {
	if u.Username != "" {
		return "@" + u.Username
	}
	return strings.TrimSpace(u.FirstName + " " + u.LastName)
}

// mentioned says whether a group message is for the bot: it names the bot
// (@username, or a text mention of its account), is a command not
// addressed to another bot, or replies to one of the bot's messages.
func (a *Adapter) mentioned(m *telego.Message, text string, entities []telego.MessageEntity) bool {
	id, name := a.me()
	if r := m.ReplyToMessage; r != nil && r.From != nil && id != 0 && r.From.ID == id {
		return true
	}
	for _, e := range entities {
		switch e.Type {
		case telego.EntityTypeMention:
			if name != "" && strings.EqualFold(utf16Slice(text, e.Offset, e.Length), "@"+name) {
				return true
			}
		case telego.EntityTypeTextMention:
			if e.User != nil && id != 0 && e.User.ID == id {
				return true
			}
		case telego.EntityTypeBotCommand:
			if e.Offset == 0 {
				_, to, addressed := strings.Cut(utf16Slice(text, e.Offset, e.Length), "@")
				if !addressed || strings.EqualFold(to, name) {
					return true
				}
			}
		}
	}
	if len(entities) > 0 {
		return false
	}
	// A server that marks no entities (an emulator): read the text.
	if strings.HasPrefix(text, "/") {
		head, _, _ := strings.Cut(text, " ")
		_, to, addressed := strings.Cut(head, "@")
		return !addressed || strings.EqualFold(to, name)
	}
	if name == "" {
		return false
	}
	low, at := strings.ToLower(text), "@"+strings.ToLower(name)
	for i := strings.Index(low, at); i >= 0; {
		end := i + len(at)
		if end == len(low) || !markdown.IsWord(low[end]) && low[end] != '_' {
			return true
		}
		j := strings.Index(low[end:], at)
		if j < 0 {
			break
		}
		i = end + j
	}
	return false
}

// utf16Slice cuts s by UTF-16 offsets, as message entities count.
func utf16Slice(s string, off, n int) string {
	u := utf16.Encode([]rune(s))
	if off < 0 || n < 0 || off+n > len(u) {
		return ""
	}
	return string(utf16.Decode(u[off : off+n]))
}

// file is one attachment to fetch.
type file struct {
	kind, id, unique, name, mime string
	size                         int64
}

// attachments downloads a message's files into the cache. A file that can
// never be had (too large, refused by Telegram) becomes a note; a transient
// failure is an error, so the update is tried again, up to maxTries.
func (a *Adapter) attachments(ctx context.Context, updateID int, m *telego.Message) ([]schema.Attachment, []string, error) {
	var files []file
	if len(m.Photo) > 0 {
		best := m.Photo[0]
		for _, p := range m.Photo[1:] {
			if p.Width*p.Height > best.Width*best.Height || p.Width*p.Height == best.Width*best.Height && p.FileSize > best.FileSize {
				best = p
			}
		}
		files = append(files, file{kind: "photo", id: best.FileID, unique: best.FileUniqueID, mime: "image/jpeg", size: int64(best.FileSize)})
	}
	if d := m.Document; d != nil {
		files = append(files, file{kind: "document", id: d.FileID, unique: d.FileUniqueID, name: d.FileName, mime: d.MimeType, size: d.FileSize})
	}
	if v := m.Voice; v != nil {
		a.heardVoice(messageID(m.Chat.ID, m.MessageID))
		files = append(files, file{kind: "voice", id: v.FileID, unique: v.FileUniqueID, mime: v.MimeType, size: v.FileSize})
	}
	if au := m.Audio; au != nil {
		files = append(files, file{kind: "audio", id: au.FileID, unique: au.FileUniqueID, name: au.FileName, mime: au.MimeType, size: au.FileSize})
	}
	if v := m.Video; v != nil {
		files = append(files, file{kind: "video", id: v.FileID, unique: v.FileUniqueID, name: v.FileName, mime: v.MimeType, size: v.FileSize})
	}
	var (
		atts  []schema.Attachment
		notes []string
	)
	for _, f := range files {
		att, err := a.download(ctx, m.Chat.ID, m.MessageID, f)
		var perm *gw.PermanentError
		switch {
		case err == nil:
			atts = append(atts, att)
			notes = append(notes, fmt.Sprintf("[attached %s: %s]", describe(f), att.Path))
			continue
		case errors.As(err, &perm):
		default:
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			a.mu.Lock()
			a.tries[updateID]++
			n := a.tries[updateID]
			a.mu.Unlock()
			if n < maxTries {
				return nil, nil, fmt.Errorf("download %s of message %s: %w", f.kind, messageID(m.Chat.ID, m.MessageID), err)
			}
		}
		a.log.Warn().Err(err).Str("kind", f.kind).Msg("attachment not downloaded")
		notes = append(notes, fmt.Sprintf("[attached %s: not downloaded: %v]", describe(f), err))
	}
	return atts, notes, nil
}

func describe(f file) string {
	if f.name != "" {
		return f.kind + " " + strconv.Quote(f.name)
	}
	return f.kind
}

// download fetches one file into CacheDir (again only if it is not there
// yet: a message delivered twice reuses it).
func (a *Adapter) download(ctx context.Context, chat int64, msg int, f file) (schema.Attachment, error) {
	limit := a.cfg.MaxDownload
	if f.size > limit {
		return schema.Attachment{}, &gw.PermanentError{Err: fmt.Errorf("%s is over the %s limit", size(f.size), size(limit))}
	}
	if a.cfg.CacheDir == "" {
		return schema.Attachment{}, &gw.PermanentError{Err: errors.New("no cache directory configured")}
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	info, err := a.bot.GetFile(cctx, &telego.GetFileParams{FileID: f.id})
	cancel()
	if err != nil {
		return schema.Attachment{}, a.classify(err)
	}
	if info.FileSize > limit {
		return schema.Attachment{}, &gw.PermanentError{Err: fmt.Errorf("%s is over the %s limit", size(info.FileSize), size(limit))}
	}
	if info.FilePath == "" {
		return schema.Attachment{}, &gw.PermanentError{Err: errors.New("telegram gave no file path")}
	}
	ext := filepath.Ext(f.name)
	if ext == "" {
		ext = path.Ext(info.FilePath)
	}
	name := fmt.Sprintf("%d-%d-%s%s", chat, msg, safeName(f.unique), safeName(ext))
	dst, err := filepath.Abs(filepath.Join(a.cfg.CacheDir, name))
	if err != nil {
		return schema.Attachment{}, &gw.PermanentError{Err: err}
	}
	att := schema.Attachment{Kind: f.kind, Path: dst, Name: f.name, MimeType: f.mime}
	if st, err := os.Stat(dst); err == nil {
		att.Size = st.Size()
		return att, nil
	}
	if err := os.MkdirAll(a.cfg.CacheDir, 0o700); err != nil {
		return schema.Attachment{}, &gw.PermanentError{Err: err}
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(dctx, http.MethodGet, a.bot.FileDownloadURL(info.FilePath), nil)
	if err != nil {
		return schema.Attachment{}, &gw.PermanentError{Err: a.scrub(err)}
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return schema.Attachment{}, a.scrub(err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 500:
		return schema.Attachment{}, fmt.Errorf("file download: HTTP %d", resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return schema.Attachment{}, &gw.PermanentError{Err: fmt.Errorf("file download: HTTP %d", resp.StatusCode)}
	}
	tmp, err := os.CreateTemp(a.cfg.CacheDir, ".download-*")
	if err != nil {
		return schema.Attachment{}, &gw.PermanentError{Err: err}
	}
	defer os.Remove(tmp.Name())
	n, err := io.Copy(tmp, io.LimitReader(resp.Body, limit+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return schema.Attachment{}, fmt.Errorf("file download: %w", a.scrub(err))
	}
	if n > limit {
		return schema.Attachment{}, &gw.PermanentError{Err: fmt.Errorf("the file is over the %s limit", size(limit))}
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return schema.Attachment{}, &gw.PermanentError{Err: err}
	}
	att.Size = n
	return att, nil
}

// safeName keeps the characters that are safe in a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return -1
	}, s)
}

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// callback hands a button press to the router (whose key for the chat the
// approval message's id recalls) and answers the query, which stops the
// button's spinner.
func (a *Adapter) callback(ctx context.Context, q *telego.CallbackQuery, in gw.Inbox) error {
	var (
		chat int64
		msg  int
	)
	if q.Message != nil {
		chat, msg = q.Message.GetChat().ID, q.Message.GetMessageID()
	}
	a.mu.Lock()
	key := a.buttons[messageID(chat, msg)]
	a.mu.Unlock()
	answer := ""
	if key == "" {
		// Asked before a restart: the question died with that process.
		answer = "This question is no longer waiting for an answer."
	} else {
		cb := schema.Inbound{Kind: schema.InboundCallback, Key: key, Platform: Platform, Chat: strconv.FormatInt(chat, 10),
			User: strconv.FormatInt(q.From.ID, 10), UserName: userName(&q.From), Data: q.Data}
		if err := in(ctx, cb); err != nil {
			return err
		}
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := a.bot.AnswerCallbackQuery(cctx, &telego.AnswerCallbackQueryParams{CallbackQueryID: q.ID, Text: answer}); err != nil {
		a.log.Debug().Err(a.scrub(err)).Msg("answerCallbackQuery")
	}
	return nil
}
