package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/mcp"
	"github.com/hermes-go/hermes/schema"
)

// maxWait bounds how long one receive call may wait for messages.
const maxWait = 20 * time.Second

// Platforms are the gateway platforms the running plugins declare, each a
// gw.Platform served through the plugin's receive and send tools.
func (h *Host) Platforms(log zerolog.Logger) []gw.Platform {
	var out []gw.Platform
	for _, r := range h.Plugins() {
		if r.Server == nil {
			continue
		}
		for _, d := range r.Manifest.Platforms {
			out = append(out, &Platform{r: r, decl: d, log: log.With().Str("platform", d.Name).Str("plugin", r.Name).Logger()})
		}
	}
	return out
}

// Platform is a plugin's gateway platform.
type Platform struct {
	r    *Running
	decl PlatformDecl
	log  zerolog.Logger
}

var (
	_ gw.Platform  = (*Platform)(nil)
	_ gw.Connector = (*Platform)(nil)
)

// Name is the platform's name (its sessions' source).
func (p *Platform) Name() string { return p.decl.Name }

// Connected says whether the plugin's MCP connection is up.
func (p *Platform) Connected() bool { return p.r.Server.Status().State == mcp.Connected }

// message is one message a plugin's receive tool answers.
type message struct {
	Chat      string `json:"chat"`
	ChatType  string `json:"chat_type"`
	Thread    string `json:"thread"`
	User      string `json:"user"`
	UserName  string `json:"user_name"`
	MessageID string `json:"message_id"`
	Text      string `json:"text"`
	Mentioned bool   `json:"mentioned"`
}

// wait is how long one receive call waits: below the plugin's own
// timeout, so that an idle platform is not a timed-out call.
func (p *Platform) wait() time.Duration {
	timeout := DefaultTimeout
	if p.r.Manifest.Timeout > 0 {
		timeout = time.Duration(p.r.Manifest.Timeout) * time.Second
	}
	return max(min(maxWait, timeout-2*time.Second), 0)
}

// Run calls the receive tool in a loop and hands each message to in,
// acknowledging it at the next call once the gateway recorded it. A
// failing call (the plugin restarting, a bad answer) is retried with
// backoff; Run returns when ctx ends.
func (p *Platform) Run(ctx context.Context, in gw.Inbox) error {
	backoff := 250 * time.Millisecond
	acked := []string{}
	for ctx.Err() == nil {
		msgs, err := p.receive(ctx, acked)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			p.log.Warn().Err(err).Dur("retry_in", backoff).Msg("receive failed")
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 10*time.Second)
			continue
		}
		backoff = 250 * time.Millisecond
		acked = acked[:0]
		for i, m := range msgs {
			if m.Chat == "" || m.User == "" || m.MessageID == "" || strings.TrimSpace(m.Text) == "" {
				p.log.Warn().Int("index", i).Msg("a message without chat, user, message_id or text is dropped")
				continue
			}
			ct := m.ChatType
			if ct != "group" {
				ct = "dm"
			}
			msg := schema.Inbound{Platform: p.decl.Name, Chat: m.Chat, ChatType: ct, Thread: m.Thread, User: m.User,
				UserName: m.UserName, MessageID: m.MessageID, Text: m.Text, Mentioned: m.Mentioned}
			// Offered until the gateway records it; the plugin answers
			// it again if Hermes stops first (it is not acknowledged).
			wait := 250 * time.Millisecond
			for {
				err := in(ctx, msg)
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					return nil
				}
				p.log.Warn().Err(err).Dur("retry_in", wait).Msg("message not accepted yet")
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(wait):
				}
				wait = min(wait*2, 10*time.Second)
			}
			acked = append(acked, m.MessageID)
		}
	}
	return nil
}

func (p *Platform) receive(ctx context.Context, acked []string) ([]message, error) {
	t, err := p.r.tool(p.decl.Receive)
	if err != nil {
		return nil, err
	}
	args, _ := json.Marshal(map[string]any{"ack": acked, "wait_seconds": int(p.wait() / time.Second)})
	out, err := t.Run(ctx, args)
	if err != nil {
		return nil, err
	}
	var msgs []message
	if s := strings.TrimSpace(out); s != "" && s != "null" {
		if err := json.Unmarshal([]byte(s), &msgs); err != nil {
			return nil, fmt.Errorf("plugin %s's %s answered what is not a JSON array of messages: %v", p.r.Name, p.decl.Receive, err)
		}
	}
	return msgs, nil
}

// Send calls the send tool with one outbound message and returns the ids
// it answers. Typing indicators and streamed deltas are not sent.
func (p *Platform) Send(ctx context.Context, out schema.Outbound) ([]string, error) {
	if out.Kind == schema.OutboundTyping || out.Kind == schema.OutboundDelta {
		return nil, nil
	}
	t, err := p.r.tool(p.decl.Send)
	if err != nil {
		return nil, err
	}
	args, _ := json.Marshal(map[string]any{"chat": out.Chat, "thread": out.Thread, "text": out.Text, "in_reply_to": out.InReplyTo,
		"kind": out.Kind, "choices": out.Choices})
	res, err := t.Run(ctx, args)
	if err != nil {
		return nil, fmt.Errorf("plugin %s's %s: %w", p.r.Name, p.decl.Send, err)
	}
	var ids struct {
		IDs []string `json:"ids"`
	}
	if s := strings.TrimSpace(res); strings.HasPrefix(s, "{") {
		if err := json.Unmarshal([]byte(s), &ids); err != nil {
			return nil, &gw.PermanentError{Err: fmt.Errorf("plugin %s's %s answered %q: %v", p.r.Name, p.decl.Send, s, err)}
		}
	}
	return ids.IDs, nil
}
