package matrix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/schema"
)

// batch is what one /sync brought that is still to be handed over, in
// order; handled items leave it, so a retry resumes where it failed.
type batch struct {
	next  string
	items []item
}

// item is an invite to answer or a message to hand over.
type item struct {
	room    id.RoomID
	invite  bool
	inviter id.UserID
	direct  bool
	ev      *event.Event
}

// collect lists what resp holds for the adapter. On the first sync of an
// account (no token yet) the timelines hold history: messages from before
// the adapter started are skipped.
func (a *Adapter) collect(resp *mautrix.RespSync, first bool) *batch {
	b := &batch{next: resp.NextBatch}
	me := a.cli.UserID
	for room, r := range resp.Rooms.Invite {
		for _, ev := range r.State.Events {
			if ev.Type != event.StateMember || ev.StateKey == nil || id.UserID(*ev.StateKey) != me {
				continue
			}
			m := parseMember(ev)
			if m.Membership == event.MembershipInvite {
				b.items = append(b.items, item{room: room, invite: true, inviter: ev.Sender, direct: m.IsDirect})
			}
		}
	}
	a.mu.Lock()
	for room := range resp.Rooms.Leave {
		delete(a.members, room)
	}
	for room, r := range resp.Rooms.Join {
		for _, ev := range r.State.Events {
			if ev.Type == event.StateMember {
				delete(a.members, room)
			}
		}
		for _, ev := range r.Timeline.Events {
			if ev.Type == event.StateMember {
				delete(a.members, room)
			}
		}
	}
	a.mu.Unlock()
	startMS := a.start.UnixMilli()
	for room, r := range resp.Rooms.Join {
		if r.Timeline.Limited && !first {
			a.log.Warn().Str("room", string(room)).Msg("the room had more new messages than one sync returns: the oldest are skipped")
		}
		for _, ev := range r.Timeline.Events {
			if ev.Type != event.EventMessage && ev.Type != event.EventEncrypted || ev.Sender == me {
				continue
			}
			if first && ev.Timestamp < startMS {
				continue
			}
			ev.RoomID = room
			b.items = append(b.items, item{room: room, ev: ev})
		}
	}
	return b
}

func parseMember(ev *event.Event) *event.MemberEventContent {
	if ev.Content.Parsed == nil {
		_ = ev.Content.ParseRaw(ev.Type)
	}
	return ev.Content.AsMember()
}

// handle answers the batch's invites and hands its messages to in, one
// at a time; an error leaves the item (and those after it) in the batch.
func (a *Adapter) handle(ctx context.Context, b *batch, in gw.Inbox) error {
	for len(b.items) > 0 {
		it := b.items[0]
		if it.invite {
			if err := a.answerInvite(ctx, it); err != nil {
				return err
			}
		} else if it.ev.Type == event.EventEncrypted {
			if err := a.cannotRead(ctx, it.room); err != nil {
				return err
			}
		} else {
			msg, ok, err := a.inbound(ctx, it.room, it.ev)
			if err != nil {
				return err
			}
			if ok {
				if err := in(ctx, msg); err != nil {
					return err
				}
			}
		}
		b.items = b.items[1:]
	}
	return nil
}

// encryptedNotice is what an end-to-end encrypted room is told, once per
// room and run.
const encryptedNotice = "This room is end-to-end encrypted, and Hermes cannot read encrypted messages. " +
	"Talk to it in a room without encryption (for a direct chat: a new room with encryption turned off)."

// cannotRead tells an encrypted room, once, that the bot cannot read it.
func (a *Adapter) cannotRead(ctx context.Context, room id.RoomID) error {
	a.mu.Lock()
	told := a.encrypted[room]
	a.mu.Unlock()
	if told {
		return nil
	}
	c := render(encryptedNotice, event.MsgNotice)
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := a.cli.SendMessageEvent(cctx, room, event.EventMessage, c, mautrix.ReqSendEvent{DontEncrypt: true})
	if err != nil {
		err = classify(err)
		var perm *gw.PermanentError
		if !errors.As(err, &perm) {
			return fmt.Errorf("tell %s that it is encrypted: %w", room, err)
		}
		a.log.Warn().Err(err).Str("room", string(room)).Msg("cannot tell an encrypted room that the bot cannot read it")
	} else {
		a.log.Warn().Str("room", string(room)).Msg("an end-to-end encrypted room: its messages are not read")
	}
	a.mu.Lock()
	a.encrypted[room] = true
	a.mu.Unlock()
	return nil
}

// mayInvite says whether the bot joins a room user invited it to.
func (a *Adapter) mayInvite(user id.UserID, direct bool) bool {
	return a.cfg.AllowAll || a.allowed[user] || direct && a.cfg.PairingInvites
}

// answerInvite joins the room when the inviter may invite the bot, and
// declines the invite otherwise.
func (a *Adapter) answerInvite(ctx context.Context, it item) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	log := a.log.With().Str("room", string(it.room)).Str("inviter", string(it.inviter)).Logger()
	var err error
	if a.mayInvite(it.inviter, it.direct) {
		_, err = a.cli.JoinRoomByID(cctx, it.room)
		if err == nil {
			log.Info().Bool("direct", it.direct).Msg("joined a room on invitation")
		}
	} else {
		_, err = a.cli.LeaveRoom(cctx, it.room, &mautrix.ReqLeave{Reason: "not allowed to invite this bot"})
		if err == nil {
			log.Warn().Msg("declined an invite from someone not on platforms.matrix.allowed_users")
		}
	}
	if err == nil {
		return nil
	}
	err = classify(err)
	var perm *gw.PermanentError
	if errors.As(err, &perm) {
		// The invite was withdrawn, the room is gone: nothing to do.
		log.Warn().Err(err).Msg("answering an invite failed")
		return nil
	}
	return fmt.Errorf("answer the invite to %s: %w", it.room, err)
}

// inbound maps a room message. ok is false for what starts no turn: edits,
// notices (what bots send), and messages other than text and emotes.
func (a *Adapter) inbound(ctx context.Context, room id.RoomID, ev *event.Event) (schema.Inbound, bool, error) {
	if ev.Content.Parsed == nil {
		if err := ev.Content.ParseRaw(ev.Type); err != nil && !errors.Is(err, event.ErrContentAlreadyParsed) {
			a.log.Debug().Err(err).Str("event", string(ev.ID)).Msg("unreadable message")
			return schema.Inbound{}, false, nil
		}
	}
	msg := ev.Content.AsMessage()
	if msg.MsgType != event.MsgText && msg.MsgType != event.MsgEmote && msg.MsgType != event.MsgImage {
		return schema.Inbound{}, false, nil
	}
	rel := msg.RelatesTo
	if rel.GetReplaceID() != "" {
		return schema.Inbound{}, false, nil
	}
	text := msg.Body
	var atts []schema.Attachment
	if msg.MsgType == event.MsgImage {
		att, note, err := a.image(ctx, ev.ID, msg)
		if err != nil {
			return schema.Inbound{}, false, err
		}
		if att != nil {
			atts = append(atts, *att)
		}
		text = strings.TrimSpace(msg.GetCaption() + "\n\n" + note)
	}
	if rel.GetNonFallbackReplyTo() != "" {
		text = event.TrimReplyFallbackText(text)
	}
	if strings.TrimSpace(text) == "" {
		return schema.Inbound{}, false, nil
	}
	n, err := a.memberCount(ctx, room)
	if err != nil {
		return schema.Inbound{}, false, err
	}
	in := schema.Inbound{
		Platform:  Platform,
		Chat:      string(room),
		ChatType:  "dm",
		Thread:    string(rel.GetThreadParent()),
		User:      string(ev.Sender),
		UserName:  string(ev.Sender),
		MessageID: string(ev.ID),
		Text:      text,
		// Images go to the model from here (the gateway's Config.Images).
		Attachments: atts,
	}
	if n > 2 {
		in.ChatType = "group"
		in.Mentioned = a.mentioned(ctx, room, msg, text)
	}
	return in, true, nil
}

// memberCount is how many members have joined room (cached until the
// next membership change).
func (a *Adapter) memberCount(ctx context.Context, room id.RoomID) (int, error) {
	a.mu.Lock()
	n, ok := a.members[room]
	a.mu.Unlock()
	if ok {
		return n, nil
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := a.cli.JoinedMembers(cctx, room)
	if err != nil {
		return 0, fmt.Errorf("members of %s: %w", room, classify(err))
	}
	a.mu.Lock()
	a.members[room] = len(resp.Joined)
	a.mu.Unlock()
	return len(resp.Joined), nil
}

// mentioned says whether a group message is for the bot: it mentions the
// bot (m.mentions, a pill linking to it, its id, or "name:" in front), is
// a command, replies to one of the bot's messages, or is in a thread the
// bot answered in.
func (a *Adapter) mentioned(ctx context.Context, room id.RoomID, msg *event.MessageEventContent, text string) bool {
	me := a.cli.UserID
	if strings.HasPrefix(strings.TrimSpace(text), "/") {
		return true
	}
	if msg.Mentions != nil && msg.Mentions.Has(me) {
		return true
	}
	if strings.Contains(text, string(me)) {
		return true
	}
	if msg.FormattedBody != "" {
		uri := me.URI().MatrixToURL()
		if strings.Contains(msg.FormattedBody, uri) || strings.Contains(msg.FormattedBody, "https://matrix.to/#/"+url.PathEscape(string(me))) {
			return true
		}
	}
	low := strings.ToLower(strings.TrimSpace(text))
	for _, name := range a.names() {
		if name == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(low, strings.ToLower(name)); ok && (strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, ",")) {
			return true
		}
	}
	rel := msg.RelatesTo
	a.mu.Lock()
	inThread := a.threads[rel.GetThreadParent()] || a.ours[rel.GetThreadParent()]
	replyToOurs := a.ours[rel.GetReplyTo()]
	a.mu.Unlock()
	if inThread || replyToOurs {
		return true
	}
	if to := rel.GetNonFallbackReplyTo(); to != "" {
		// A reply to a message sent before the bot last started.
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		ev, err := a.cli.GetEvent(cctx, room, to)
		if err == nil && ev.Sender == me {
			return true
		}
	}
	return false
}

// names are what people call the bot: its localpart and display name.
func (a *Adapter) names() []string {
	local := a.cli.UserID.Localpart()
	name, _ := a.displayName.Load().(string)
	return []string{local, name}
}

// remember keeps an event the bot sent (and the thread it went to).
func (a *Adapter) remember(ev id.EventID, thread id.EventID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.ours[ev] {
		a.ours[ev] = true
		a.oursOrder = append(a.oursOrder, ev)
	}
	for len(a.oursOrder) > maxRemembered {
		delete(a.ours, a.oursOrder[0])
		a.oursOrder = a.oursOrder[1:]
	}
	if thread != "" {
		if len(a.threads) >= maxRemembered {
			clear(a.threads)
		}
		a.threads[thread] = true
	}
}

// maxImage is the largest image downloaded: what the model may be shown.
const maxImage = 20 << 20

// image downloads an m.image into the cache and returns it as an
// attachment, with the note the text carries (where the file is, or why it
// is not there). Encrypted images (which need the room's keys) and images
// over the limit are notes only. A download that fails for a moment is an
// error, so the message is tried again.
func (a *Adapter) image(ctx context.Context, evID id.EventID, msg *event.MessageEventContent) (*schema.Attachment, string, error) {
	name := msg.GetFileName()
	if name == "" {
		name = "image"
	}
	switch {
	case a.cfg.CacheDir == "":
		return nil, fmt.Sprintf("[a picture (%s) was sent; this gateway keeps no files]", name), nil
	case msg.File != nil || msg.URL == "":
		return nil, fmt.Sprintf("[an encrypted picture (%s) was sent; encrypted files are not read]", name), nil
	case msg.Info != nil && msg.Info.Size > maxImage:
		return nil, fmt.Sprintf("[a picture (%s) over %d MiB was sent: not downloaded]", name, maxImage>>20), nil
	}
	mxc, err := msg.URL.Parse()
	if err != nil {
		return nil, fmt.Sprintf("[a picture (%s) with an unreadable address was sent]", name), nil
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	resp, err := a.cli.Download(dctx, mxc)
	if err != nil {
		err = classify(err)
		var perm *gw.PermanentError
		if errors.As(err, &perm) {
			return nil, fmt.Sprintf("[a picture (%s) was sent but could not be downloaded: %v]", name, err), nil
		}
		return nil, "", fmt.Errorf("download %s: %w", msg.URL, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxImage+1))
	if err != nil {
		return nil, "", fmt.Errorf("download %s: %w", msg.URL, err)
	}
	if len(data) > maxImage {
		return nil, fmt.Sprintf("[a picture (%s) over %d MiB was sent: not downloaded]", name, maxImage>>20), nil
	}
	if err := os.MkdirAll(a.cfg.CacheDir, 0o700); err != nil {
		return nil, "", err
	}
	ext := strings.ToLower(filepath.Ext(name))
	if len(ext) > 6 {
		ext = ""
	}
	dst, err := filepath.Abs(filepath.Join(a.cfg.CacheDir, safeFile(string(evID))+ext))
	if err != nil {
		return nil, "", err
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		return nil, "", err
	}
	mime := ""
	if msg.Info != nil {
		mime = msg.Info.MimeType
	}
	return &schema.Attachment{Kind: schema.AttachmentPhoto, Path: dst, Name: name, MimeType: mime, Size: int64(len(data))},
		fmt.Sprintf("[attached photo: %s]", dst), nil
}

// safeFile keeps letters, digits, dashes and underscores of s.
func safeFile(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			b.WriteRune(r)
		}
	}
	return b.String()
}
