package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/schema"
)

// socket receives over Socket Mode until ctx ends. An envelope is
// acknowledged only after the Inbox accepted what it carried; one that was
// not is left unacknowledged, and Slack delivers it again.
func (a *Adapter) socket(ctx context.Context, in gw.Inbox) error {
	client := socketmode.New(a.api, socketmode.OptionPingInterval(a.cfg.PingInterval))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- client.RunContext(ctx) }()
	for {
		select {
		case err := <-done:
			a.connected.Store(false)
			if ctx.Err() != nil {
				return nil
			}
			err = a.classify(err)
			var perm *gw.PermanentError
			if errors.As(err, &perm) {
				return &gw.PermanentError{Err: fmt.Errorf("slack socket mode refused the app token (%w): check SLACK_APP_TOKEN", perm.Err)}
			}
			return fmt.Errorf("slack socket mode: %w", err)
		case evt := <-client.Events:
			if err := a.onSocketEvent(ctx, client, evt, in); err != nil {
				return err
			}
		}
	}
}

func (a *Adapter) onSocketEvent(ctx context.Context, client *socketmode.Client, evt socketmode.Event, in gw.Inbox) error {
	switch evt.Type {
	case socketmode.EventTypeConnected:
		a.connected.Store(true)
		a.log.Info().Msg("socket mode connected")
	case socketmode.EventTypeConnectionError, socketmode.EventTypeDisconnect:
		a.connected.Store(false)
		a.log.Warn().Str("event", string(evt.Type)).Msg("socket mode connection lost: reconnecting")
	case socketmode.EventTypeInvalidAuth:
		a.connected.Store(false)
		return &gw.PermanentError{Err: errors.New("slack socket mode refused the app token: check SLACK_APP_TOKEN")}
	case socketmode.EventTypeErrorBadMessage:
		// An envelope this build cannot read (an event type it does not
		// know) is acknowledged: it never will read it, and Slack would
		// only send it again. Frames without an envelope are ignored.
		var env struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if bad, ok := evt.Data.(*socketmode.ErrorBadMessage); ok && json.Unmarshal(bad.Message, &env) == nil && env.EnvelopeID != "" {
			a.log.Debug().Str("envelope", env.EnvelopeID).Msg("socket mode: an envelope this build cannot read: acknowledged, ignored")
			if err := client.AckCtx(ctx, env.EnvelopeID, nil); err != nil && ctx.Err() == nil {
				a.log.Warn().Err(err).Msg("socket mode ack")
			}
			return nil
		}
		a.log.Debug().Msg("socket mode: a frame that is not a Socket Mode request: ignored")
	case socketmode.EventTypeEventsAPI:
		ev, ok := evt.Data.(slackevents.EventsAPIEvent)
		if ok && ev.Type == slackevents.CallbackEvent {
			if m, ok := a.event(ctx, ev.InnerEvent.Data); ok && !a.hand(ctx, in, m) {
				return nil
			}
		}
		a.ack(ctx, client, evt, nil)
	case socketmode.EventTypeSlashCommand:
		c, _ := evt.Data.(slack.SlashCommand)
		m, ok, reply := a.slash(c)
		if ok && !a.hand(ctx, in, m) {
			return nil
		}
		var payload any
		if reply != "" {
			payload = map[string]string{"response_type": "ephemeral", "text": reply}
		}
		a.ack(ctx, client, evt, payload)
	case socketmode.EventTypeInteractive:
		cb, _ := evt.Data.(slack.InteractionCallback)
		if m, ok := a.interaction(cb); ok && !a.hand(ctx, in, m) {
			return nil
		}
		a.ack(ctx, client, evt, nil)
	}
	return nil
}

// hand gives m to in and says whether it was accepted.
func (a *Adapter) hand(ctx context.Context, in gw.Inbox, m schema.Inbound) bool {
	if err := in(ctx, m); err != nil {
		if ctx.Err() == nil {
			a.log.Warn().Err(err).Str("message_id", m.MessageID).Msg("not accepted yet: left unacknowledged, Slack will send it again")
		}
		return false
	}
	return true
}

func (a *Adapter) ack(ctx context.Context, client *socketmode.Client, evt socketmode.Event, payload any) {
	if evt.Request == nil || evt.Request.EnvelopeID == "" {
		return
	}
	if err := client.AckCtx(ctx, evt.Request.EnvelopeID, payload); err != nil && ctx.Err() == nil {
		a.log.Warn().Err(err).Msg("socket mode ack")
	}
}
