package slack

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/hermes-go/hermes/schema"
)

// Acknowledgement by reaction. The Web API has no typing indicator for
// bots, so while a turn runs, the message it answers wears an "eyes"
// reaction (reactions.add on the router's typing signal), taken off
// (reactions.remove) once the answer is delivered, with an "x" in its place
// when the turn failed — as Hermes' own Slack adapter acknowledges. The
// bot needs the reactions:write scope: a token without it turns
// reactions off with one warning. Any other failure costs the reaction
// only, never the answer. A reaction still on when the process stopped
// stays (the adapter keeps no record of it).

// Reactions the adapter puts on a person's message.
const (
	ackReaction  = "eyes"
	failReaction = "x"
)

// maxReacting bounds the messages wearing the acknowledgement at once.
const maxReacting = 1024

// reactTimeout bounds one reactions call: typing is best effort.
const reactTimeout = 5 * time.Second

// scopeCodes are Slack's answers meaning the token may not react at all.
var scopeCodes = map[string]bool{"missing_scope": true, "not_allowed_token_type": true, "no_permission": true}

// messageRef reads a message id of this adapter ("channel:ts") as the
// message reactions go on; false for another kind of id (a slash
// command's).
func messageRef(id string) (slack.ItemRef, bool) {
	ch, ts, ok := strings.Cut(id, ":")
	if !ok || ch == "" || ch == "command" || !isTS(ts) {
		return slack.ItemRef{}, false
	}
	return slack.NewRefToMessage(ch, ts), true
}

// isTS reports whether s is a Slack message timestamp ("1700000000.000100").
func isTS(s string) bool {
	sec, micro, ok := strings.Cut(s, ".")
	return ok && sec != "" && micro != "" && strings.Trim(sec+micro, "0123456789") == ""
}

// acknowledge puts the acknowledgement on the message a turn answers, once
// per turn (the typing signal repeats while it runs).
func (a *Adapter) acknowledge(ctx context.Context, out schema.Outbound) {
	ref, ok := messageRef(out.InReplyTo)
	if !ok || a.noReactions.Load() {
		return
	}
	a.mu.Lock()
	if a.reacting[out.InReplyTo] || len(a.reacting) >= maxReacting {
		a.mu.Unlock()
		return
	}
	a.reacting[out.InReplyTo] = true
	a.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, reactTimeout)
	defer cancel()
	err := a.api.AddReactionContext(cctx, ackReaction, ref)
	var se slack.SlackErrorResponse
	if err == nil || errors.As(err, &se) && se.Err == "already_reacted" {
		return
	}
	a.mu.Lock()
	delete(a.reacting, out.InReplyTo) // tried again on the next typing signal
	a.mu.Unlock()
	a.reactionFailed(err)
}

// answered takes the acknowledgement off the message out answers, once out
// is delivered, and marks a failed turn. It runs beside the delivery,
// which it never holds up, and ends within reactTimeout.
func (a *Adapter) answered(out schema.Outbound) {
	a.mu.Lock()
	on := a.reacting[out.InReplyTo]
	delete(a.reacting, out.InReplyTo)
	a.mu.Unlock()
	if !on {
		return
	}
	ref, _ := messageRef(out.InReplyTo)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), reactTimeout)
		defer cancel()
		if err := a.api.RemoveReactionContext(ctx, ackReaction, ref); err != nil {
			a.reactionFailed(err)
		}
		if out.Error != "" {
			if err := a.api.AddReactionContext(ctx, failReaction, ref); err != nil {
				a.reactionFailed(err)
			}
		}
	}()
}

// reactionFailed notes a reactions call that failed: a token that may not
// react turns reactions off, with one warning saying what to grant.
func (a *Adapter) reactionFailed(err error) {
	err = a.scrub(err)
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && scopeCodes[se.Err] {
		if !a.noReactions.Swap(true) {
			a.log.Warn().Err(err).Msg("slack: the bot may not add reactions (grant the reactions:write scope to see 👀 on messages being answered): reactions off")
		}
		return
	}
	a.log.Debug().Err(err).Msg("slack: a reaction was not changed")
}
