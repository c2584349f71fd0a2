package slack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/hermes-go/hermes/actors/command"
	"github.com/hermes-go/hermes/schema"
)

// event maps an Events API inner event (from the HTTP endpoint or Socket
// Mode). ok is false for what starts no turn: edits, joins, the bot's own
// posts and other bots'.
func (a *Adapter) event(ctx context.Context, data any) (schema.Inbound, bool) {
	switch e := data.(type) {
	case *slackevents.MessageEvent:
		switch e.SubType {
		case "", "thread_broadcast", "file_share":
		default:
			return schema.Inbound{}, false // edits, deletions, joins, bot_message
		}
		var files []slack.File
		if e.Message != nil {
			files = e.Message.Files // a file_share message's files
		}
		in, ok := a.message(e.User, e.BotID, e.Channel, e.ChannelType, e.Text, e.TimeStamp, e.ThreadTimeStamp, false, len(files) > 0)
		if ok && len(files) > 0 {
			in = a.files(ctx, in, files)
		}
		return in, ok
	case *slackevents.AppMentionEvent:
		return a.message(e.User, e.BotID, e.Channel, "", e.Text, e.TimeStamp, e.ThreadTimeStamp, true, false)
	}
	return schema.Inbound{}, false
}

// message maps one message. In a channel the message's thread is its
// session: a top-level message opens the thread under itself; a direct
// message at top level belongs to the DM.
func (a *Adapter) message(user, botID, channel, channelType, text, ts, threadTS string, mention, files bool) (schema.Inbound, bool) {
	bot := a.bot()
	if user == "" || botID != "" || user == bot || channel == "" || ts == "" {
		return schema.Inbound{}, false
	}
	if channelType == "" {
		channelType = typeOf(channel)
	}
	named := bot != "" && strings.Contains(text, "<@"+bot+">")
	text = a.clean(text)
	if strings.TrimSpace(text) == "" && !files {
		return schema.Inbound{}, false
	}
	in := schema.Inbound{Platform: Platform, Chat: channel, User: user, MessageID: channel + ":" + ts, Text: text}
	if channelType == "im" {
		in.ChatType = "dm"
		if threadTS != "" && threadTS != ts {
			in.Thread = threadTS
		}
		return in, true
	}
	in.ChatType = "group"
	in.Thread = ts
	if threadTS != "" {
		in.Thread = threadTS
	}
	in.Mentioned = mention || named || threadTS != "" && a.botThread(channel, threadTS)
	return in, true
}

// typeOf guesses a conversation's type from its id when the event does
// not say (app_mention, slash commands): D… is a direct message.
func typeOf(channel string) string {
	if strings.HasPrefix(channel, "D") {
		return "im"
	}
	return "channel"
}

// clean takes the bot's mention out of a message (so that "@hermes /new"
// is the command /new) and undoes Slack's escaping of &, < and >.
func (a *Adapter) clean(text string) string {
	if bot := a.bot(); bot != "" {
		text = strings.ReplaceAll(text, "<@"+bot+">", "")
	}
	text = strings.TrimSpace(text)
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(text)
}

// slash maps a slash command: its text is a prompt for the session of the
// channel (and, in a channel, of the user), or one of the gateway's chat
// commands named without its slash (chatCommand). reply is what Slack
// shows the user at once, only to them ("" for nothing).
func (a *Adapter) slash(c slack.SlashCommand) (in schema.Inbound, ok bool, reply string) {
	text := chatCommand(strings.TrimSpace(c.Text))
	if text == "" {
		return schema.Inbound{}, false, "Usage: " + c.Command + " <what to ask Hermes>"
	}
	if c.UserID == "" || c.ChannelID == "" {
		return schema.Inbound{}, false, ""
	}
	in = schema.Inbound{Platform: Platform, Chat: c.ChannelID, User: c.UserID, UserName: c.UserName, Text: text,
		MessageID: "command:" + c.TriggerID}
	if c.TriggerID == "" {
		in.MessageID = ""
	}
	if typeOf(c.ChannelID) == "im" || c.ChannelName == "directmessage" {
		in.ChatType = "dm"
	} else {
		in.ChatType, in.Mentioned = "group", true
	}
	return in, true, ""
}

// chatCommand reads "/hermes new" as the gateway's /new: a Slack client
// takes a message that starts with "/" for its own slash command, so the
// chat commands are typed after the app's. A word that names a command is
// one only alone or, for a command that takes arguments, with them:
// "/hermes model gpt-5" is /model, "/hermes start a new project" a prompt.
func chatCommand(text string) string {
	if strings.HasPrefix(text, "/") {
		return text
	}
	cmd, arg, ok := command.Gateway.Parse("/" + text)
	if !ok || cmd.ID == command.Unknown || arg != "" && cmd.Args == "" {
		return text
	}
	return "/" + text
}

// Approval buttons: the actions block's id names the router's chat (so a
// click is understood after a restart too); each button's value is the
// choice.
const (
	blockPrefix  = "hermes:"
	actionPrefix = "hermes_approval_"
	// maxBlockID is Block Kit's limit on a block_id.
	maxBlockID = 255
)

// interaction maps a click on an approval button. The chat named by the
// button must be in the channel the click came from: a payload cannot
// answer another conversation's question.
func (a *Adapter) interaction(cb slack.InteractionCallback) (schema.Inbound, bool) {
	if cb.Type != slack.InteractionTypeBlockActions || cb.User.ID == "" {
		return schema.Inbound{}, false
	}
	channel := cb.Channel.ID
	if channel == "" {
		channel = cb.Container.ChannelID
	}
	for _, act := range cb.ActionCallback.BlockActions {
		if act == nil || !strings.HasPrefix(act.ActionID, actionPrefix) || !strings.HasPrefix(act.BlockID, blockPrefix) {
			continue
		}
		key := strings.TrimPrefix(act.BlockID, blockPrefix)
		own := Platform + "/" + channel
		if channel == "" || key != own && !strings.HasPrefix(key, own+"/") {
			a.log.Warn().Str("channel", channel).Msg("an approval click names another conversation: ignored")
			return schema.Inbound{}, false
		}
		return schema.Inbound{Kind: schema.InboundCallback, Key: key, Platform: Platform, Chat: channel, User: cb.User.ID,
			UserName: cb.User.Name, Data: act.Value}, true
	}
	return schema.Inbound{}, false
}

// maxImage bounds an image downloaded from Slack (the blob store's bound).
const maxImage = 20 << 20

// files downloads the images of a message's shared files into CacheDir
// (with the bot token, as Slack's private file URLs want) as attachments
// the gateway hands the model; other files, and images it cannot take,
// become a line of the message's text saying so.
func (a *Adapter) files(ctx context.Context, in schema.Inbound, files []slack.File) schema.Inbound {
	var notes []string
	for _, f := range files {
		name := f.Name
		if name == "" {
			name = f.ID
		}
		if !strings.HasPrefix(f.Mimetype, "image/") {
			notes = append(notes, fmt.Sprintf("[a file (%s, %s) was shared; only images are read]", name, first(f.Mimetype, "unknown type")))
			continue
		}
		att, note := a.image(ctx, f, name)
		if att != nil {
			in.Attachments = append(in.Attachments, *att)
		}
		if note != "" {
			notes = append(notes, note)
		}
	}
	if len(notes) > 0 {
		in.Text = strings.TrimSpace(in.Text + "\n\n" + strings.Join(notes, "\n"))
	}
	return in
}

func (a *Adapter) image(ctx context.Context, f slack.File, name string) (*schema.Attachment, string) {
	url := first(f.URLPrivateDownload, f.URLPrivate)
	switch {
	case a.cfg.CacheDir == "":
		return nil, fmt.Sprintf("[a picture (%s) was shared; this gateway keeps no files]", name)
	case url == "":
		return nil, fmt.Sprintf("[a picture (%s) was shared without a download address]", name)
	case f.Size > maxImage:
		return nil, fmt.Sprintf("[a picture (%s) over %d MiB was shared: not downloaded]", name, maxImage>>20)
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(dctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Sprintf("[a picture (%s) with an unreadable address was shared]", name)
	}
	req.Header.Set("Authorization", "Bearer "+a.cfg.BotToken)
	client := a.cfg.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		a.log.Warn().Err(err).Str("file", f.ID).Msg("download a shared picture")
		return nil, fmt.Sprintf("[a picture (%s) was shared but could not be downloaded]", name)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxImage+1))
	switch {
	case err != nil || resp.StatusCode != http.StatusOK:
		a.log.Warn().Err(err).Int("status", resp.StatusCode).Str("file", f.ID).Msg("download a shared picture")
		return nil, fmt.Sprintf("[a picture (%s) was shared but could not be downloaded (HTTP %d)]", name, resp.StatusCode)
	case len(data) > maxImage:
		return nil, fmt.Sprintf("[a picture (%s) over %d MiB was shared: not downloaded]", name, maxImage>>20)
	case strings.HasPrefix(http.DetectContentType(data), "text/html"):
		// Slack answers a file URL without the right token with its
		// sign-in page, 200 and all.
		return nil, fmt.Sprintf("[a picture (%s) was shared but Slack did not hand it over (the app needs the files:read scope)]", name)
	}
	if err := os.MkdirAll(a.cfg.CacheDir, 0o700); err != nil {
		a.log.Error().Err(err).Msg("the image cache")
		return nil, fmt.Sprintf("[a picture (%s) was shared but could not be kept]", name)
	}
	sum := sha256.Sum256(data)
	ext := strings.ToLower(filepath.Ext(name))
	if len(ext) > 6 || strings.ContainsAny(ext, "/\\") {
		ext = ""
	}
	path := filepath.Join(a.cfg.CacheDir, hex.EncodeToString(sum[:])+ext)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		a.log.Error().Err(err).Msg("the image cache")
		return nil, fmt.Sprintf("[a picture (%s) was shared but could not be kept]", name)
	}
	return &schema.Attachment{Kind: schema.AttachmentPhoto, Path: path, Name: name, MimeType: f.Mimetype, Size: int64(len(data))}, ""
}

func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
