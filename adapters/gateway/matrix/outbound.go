package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
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
		text, files := a.mediaOf(out.Text)
		var ids []string
		if strings.TrimSpace(text) != "" || len(files) == 0 {
			o := out
			o.Text = text
			got, err := a.sendText(ctx, o, room)
			if err != nil {
				return nil, err
			}
			ids = got
		}
		more, err := a.sendFiles(ctx, out, room, files)
		return append(ids, more...), err
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

// SendsMedia reports whether the adapter sends a reply's MEDIA: files
// itself (gateway.MediaSender): when MediaRoots names where from.
func (a *Adapter) SendsMedia() bool { return len(a.cfg.MediaRoots) > 0 }

// mediaOf takes the MEDIA: tags out of text: the files that may be sent,
// and the text with a note for each that may not.
func (a *Adapter) mediaOf(text string) (string, []string) {
	text, paths := gw.SplitMedia(text)
	var files, notes []string
	for _, p := range paths {
		real, err := gw.AllowedMedia(a.cfg.MediaRoots, p)
		if err != nil {
			a.log.Warn().Err(err).Msg("media not sent")
			notes = append(notes, fmt.Sprintf("(%s was not sent: %v)", filepath.Base(p), err))
			continue
		}
		files = append(files, real)
	}
	if len(notes) > 0 {
		text = strings.TrimSpace(text + "\n\n" + strings.Join(notes, "\n"))
	}
	return text, files
}

// maxUpload bounds a file sent to a room.
const maxUpload = 50 << 20

// sendFiles uploads each file to the homeserver's media repository and
// sends it to the room, after the reply's text (a retried reply sends
// each again under the same transaction id, so it is shown once).
func (a *Adapter) sendFiles(ctx context.Context, out schema.Outbound, room id.RoomID, files []string) ([]string, error) {
	var ids []string
	for i, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			return ids, &gw.PermanentError{Err: err}
		}
		if fi.Size() > maxUpload {
			return ids, &gw.PermanentError{Err: fmt.Errorf("matrix: %s is %d bytes, more than the %d sent", filepath.Base(f), fi.Size(), maxUpload)}
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return ids, &gw.PermanentError{Err: err}
		}
		mime := http.DetectContentType(data)
		if m := mimeByExt(f); m != "" {
			mime = m
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		up, err := a.cli.UploadBytesWithName(cctx, data, mime, filepath.Base(f))
		cancel()
		if err != nil {
			return ids, a.tokenRevoked(classify(err))
		}
		msgType := event.MsgFile
		switch {
		case strings.HasPrefix(mime, "image/"):
			msgType = event.MsgImage
		case strings.HasPrefix(mime, "audio/"):
			msgType = event.MsgAudio
		case strings.HasPrefix(mime, "video/"):
			msgType = event.MsgVideo
		}
		c := &event.MessageEventContent{MsgType: msgType, Body: filepath.Base(f), FileName: filepath.Base(f), URL: up.ContentURI.CUString(),
			Info: &event.FileInfo{MimeType: mime, Size: int(fi.Size())}, Mentions: &event.Mentions{}}
		if out.Thread != "" {
			c.RelatesTo = (&event.RelatesTo{}).SetThread(id.EventID(out.Thread), id.EventID(out.Thread))
		}
		req := mautrix.ReqSendEvent{}
		if out.ReplyID != "" {
			req.TransactionID = fmt.Sprintf("hermes.%s.media.%d", out.ReplyID, i)
		}
		cctx, cancel = context.WithTimeout(ctx, callTimeout)
		resp, err := a.cli.SendMessageEvent(cctx, room, event.EventMessage, c, req)
		cancel()
		if err != nil {
			return ids, a.tokenRevoked(classify(err))
		}
		ids = append(ids, string(resp.EventID))
	}
	return ids, nil
}

// mimeByExt is the type of the files Hermes makes, by their extension
// (sniffing cannot tell an Ogg voice note from other Ogg).
func mimeByExt(f string) string {
	switch strings.ToLower(filepath.Ext(f)) {
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".webp":
		return "image/webp"
	case ".gif":
		return "image/gif"
	case ".ogg", ".opus":
		return "audio/ogg"
	case ".mp3":
		return "audio/mpeg"
	case ".wav":
		return "audio/wav"
	}
	return ""
}
