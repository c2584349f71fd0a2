package gateway

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// progressModes are the tool-progress modes in the order a bare /verbose
// steps through them.
var progressModes = []string{ProgressOff, ProgressNew, ProgressAll, ProgressVerbose}

// progressHelp says what each tool-progress mode shows.
var progressHelp = map[string]string{
	ProgressOff:     "no progress lines, the answer only",
	ProgressNew:     "a line when the tool changes",
	ProgressAll:     "a line per tool call",
	ProgressVerbose: "a line per tool call with its arguments",
}

// setProgress takes on the tool-progress mode arg for this chat (/verbose
// MODE), or the one after the chat's present mode when arg is empty; it
// returns the mode, or false when arg is none.
func (c *chat) setProgress(arg string) (string, bool) {
	arg = strings.ToLower(strings.TrimSpace(arg))
	if arg == "" {
		now := c.progress
		if now == "" && c.r.cfg.Display != nil {
			now = c.r.cfg.Display(c.info.Platform).ToolProgress
		}
		i := slices.Index(progressModes, now) // -1 (none yet): off is next
		arg = progressModes[(i+1)%len(progressModes)]
		if i < 0 {
			arg = ProgressNew
		}
	}
	if !slices.Contains(progressModes, arg) {
		return "", false
	}
	c.progress = arg
	return arg, true
}

// setReasoning shows (show, on) or hides (hide, off) the model's thinking
// in this chat; false for any other word.
func (c *chat) setReasoning(arg string) bool {
	switch strings.ToLower(strings.TrimSpace(arg)) {
	case "show", "on":
		c.reasoning = true
	case "hide", "off":
		c.reasoning = false
	default:
		return false
	}
	return true
}

// verboseCommand is /verbose [MODE].
func (c *chat) verboseCommand(arg string, say func(string) error) error {
	mode, ok := c.setProgress(arg)
	if !ok {
		return say("Usage: /verbose [off|new|all|verbose]; alone, the next of them.")
	}
	return say(fmt.Sprintf("Tool progress in this chat: %s (%s).", mode, progressHelp[mode]))
}

// reasoningCommand is /reasoning [show|hide].
func (c *chat) reasoningCommand(arg string, say func(string) error) error {
	if strings.TrimSpace(arg) == "" {
		if c.reasoning {
			return say("The model's thinking is shown above its answers in this chat; /reasoning hide hides it.")
		}
		return say("The model's thinking is hidden in this chat (it is recorded with the session); /reasoning show shows it above each answer.")
	}
	if !c.setReasoning(arg) {
		return say("Usage: /reasoning show|hide (the reasoning effort is the provider's default in this build).")
	}
	if c.reasoning {
		return say("The model's thinking is shown above its answers in this chat from the next one.")
	}
	return say("The model's thinking is hidden in this chat.")
}

// thinkingLines bounds the lines of thinking shown above an answer.
const thinkingLines = 15

// thinkingBlock is the model's thinking as a chat shows it above the
// answer: a quoted block of at most thinkingLines lines.
func thinkingBlock(thinking string) string {
	lines := strings.Split(strings.TrimSpace(thinking), "\n")
	more := 0
	if len(lines) > thinkingLines {
		lines, more = lines[:thinkingLines], len(lines)-thinkingLines
	}
	var b strings.Builder
	b.WriteString("💭 Thinking:\n")
	for _, l := range lines {
		b.WriteString("> " + l + "\n")
	}
	if more > 0 {
		fmt.Fprintf(&b, "> … (%d more lines)\n", more)
	}
	b.WriteString("\n")
	return b.String()
}

// turnThinking is the reasoning the model recorded with the last message of
// turn turnID in session id ("" for none, or when it cannot be read: the
// answer goes without it).
func turnThinking(ctx context.Context, store events.Store, id, turnID string) string {
	if id == "" || turnID == "" {
		return ""
	}
	rs, err := store.ReadStream(ctx, events.SessionStream(id), events.Backward, events.End, 64)
	if err != nil {
		return ""
	}
	for _, r := range rs {
		if r.TurnID != turnID || r.Type != schema.TypeAssistantMessageAdded {
			continue
		}
		p, err := schema.Decode(r.Envelope)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(p.(schema.AssistantMessageAdded).Reasoning)
	}
	return ""
}
