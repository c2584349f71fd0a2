package acp

import (
	"context"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// replay sends session id's conversation to the client as the updates it
// would have seen: the person's messages, the model's reasoning and
// answers, and each tool call with how it ended. A compressed session is
// followed into the sessions it continued in, so the whole conversation
// is shown, not its summary.
func replay(ctx context.Context, store events.Store, id, cwd string, send func(sdk.SessionUpdate) error) error {
	seen := map[string]bool{}
	for id != "" && !seen[id] {
		seen[id] = true
		rs, err := store.ReadStream(ctx, events.SessionStream(id), events.Forward, 0, 0)
		if err != nil {
			return err
		}
		next := ""
		for _, r := range rs {
			p, err := schema.Decode(r.Envelope)
			if err != nil {
				return &events.CorruptEventError{Stream: r.Stream, Revision: r.Revision, Position: r.Position, Err: err}
			}
			var us []sdk.SessionUpdate
			switch e := p.(type) {
			case schema.UserMessageAdded:
				us = append(us, sdk.UpdateUserMessageText(e.Content))
			case schema.AssistantMessageAdded:
				if e.Reasoning != "" {
					us = append(us, sdk.UpdateAgentThoughtText(e.Reasoning))
				}
				if e.Content != "" {
					us = append(us, sdk.UpdateAgentMessageText(e.Content))
				}
				for _, tc := range e.ToolCalls {
					info := describe(tc.Function.Name, tc.Function.Arguments, cwd)
					us = append(us, sdk.StartToolCall(sdk.ToolCallId(tc.ID), info.title, sdk.WithStartKind(info.kind),
						sdk.WithStartStatus(sdk.ToolCallStatusInProgress), sdk.WithStartRawInput(info.input),
						sdk.WithStartLocations(info.locations)))
				}
			case schema.ToolResultAdded:
				status, text := sdk.ToolCallStatusCompleted, e.Content
				if e.Error != "" {
					status = sdk.ToolCallStatusFailed
				}
				opts := []sdk.ToolCallUpdateOpt{sdk.WithUpdateStatus(status)}
				if text != "" {
					opts = append(opts, sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(clipResult(text)))}))
				}
				us = append(us, sdk.UpdateToolCall(sdk.ToolCallId(e.CallID), opts...))
			case schema.ContextCompressed:
				next = e.ChildSessionID
			}
			for _, u := range us {
				if err := send(u); err != nil {
					return err
				}
			}
		}
		id = next
	}
	return nil
}

// clipResult keeps a replayed tool result to what the editor shows.
func clipResult(s string) string {
	const max = 2000
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
