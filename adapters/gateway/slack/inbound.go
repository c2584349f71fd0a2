package slack

import (
	"strings"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/hermes-go/hermes/schema"
)

// event maps an Events API inner event (from the HTTP endpoint or Socket
// Mode). ok is false for what starts no turn: edits, joins, the bot's own
// posts and other bots'.
func (a *Adapter) event(data any) (schema.Inbound, bool) {
	switch e := data.(type) {
	case *slackevents.MessageEvent:
		switch e.SubType {
		case "", "thread_broadcast", "file_share":
		default:
			return schema.Inbound{}, false // edits, deletions, joins, bot_message
		}
		return a.message(e.User, e.BotID, e.Channel, e.ChannelType, e.Text, e.TimeStamp, e.ThreadTimeStamp, false)
	case *slackevents.AppMentionEvent:
		return a.message(e.User, e.BotID, e.Channel, "", e.Text, e.TimeStamp, e.ThreadTimeStamp, true)
	}
	return schema.Inbound{}, false
}

// message maps one message. In a channel the message's thread is its
// session: a top-level message opens the thread under itself; a direct
// message at top level belongs to the DM.
func (a *Adapter) message(user, botID, channel, channelType, text, ts, threadTS string, mention bool) (schema.Inbound, bool) {
	bot := a.bot()
	if user == "" || botID != "" || user == bot || channel == "" || ts == "" {
		return schema.Inbound{}, false
	}
	if channelType == "" {
		channelType = typeOf(channel)
	}
	named := bot != "" && strings.Contains(text, "<@"+bot+">")
	text = a.clean(text)
	if strings.TrimSpace(text) == "" {
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
// channel (and, in a channel, of the user). reply is what Slack shows the
// user at once, only to them ("" for nothing).
func (a *Adapter) slash(c slack.SlashCommand) (in schema.Inbound, ok bool, reply string) {
	text := strings.TrimSpace(c.Text)
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
