package projections_test

import (
	"context"
	"testing"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

// The gateway's streams (refusals, the chat index, each chat's record) hold
// events with no session or about one: they neither make rows of the
// session list nor touch them — before, a refusal made a session with an
// empty id.
func TestSessionListIgnoresGatewayStreams(t *testing.T) {
	e := openEnv(t, t.TempDir(), sessions.NewModel())
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	appendTo := func(stream string, meta schema.Meta, p schema.Payload) {
		t.Helper()
		if _, err := e.store.Append(ctx, stream, events.Any, schema.MustEnvelope(meta, p)); err != nil {
			t.Fatal(err)
		}
	}
	appendTo(events.SessionStream("s1"), schema.Meta{SessionID: "s1", Time: start}, schema.SessionStarted{Source: "webhook", Model: "m", Reason: schema.StartNew})
	appendTo("gateway-refused", schema.Meta{Time: start}, schema.GatewayInboundRefused{Platform: "webhook", Reason: "bad signature"})
	appendTo("gateway-chats", schema.Meta{Time: start}, schema.GatewayChatOpened{Key: "webhook/ci", Platform: "webhook", Chat: "ci"})
	appendTo("gateway-chat-webhook-0011", schema.Meta{SessionID: "s1", Time: start.Add(time.Hour)}, schema.GatewayMessageReceived{Platform: "webhook", Chat: "ci", MessageID: "d1"})
	if _, err := e.run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	ss, err := sessions.Dump(ctx, e.db.Reader())
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 || ss[0].ID != "s1" || !ss[0].LastActive.Equal(start) {
		t.Fatalf("session list %+v", ss)
	}
}
