package sessions_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/projections"
	"github.com/hermes-go/hermes/projections/sessions"
	"github.com/hermes-go/hermes/schema"
)

// Streams that are not sessions' (the gateway's chats and pairings, the
// memory) make no rows in the session list.
func TestOnlySessionStreamsMakeSessions(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	db, err := projections.OpenDB(filepath.Join(dir, "projections.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	app := func(stream string, meta schema.Meta, p schema.Payload) {
		if _, err := store.Append(ctx, stream, events.Any, schema.MustEnvelope(meta, p)); err != nil {
			t.Fatal(err)
		}
	}
	app(events.SessionStream("s1"), schema.Meta{SessionID: "s1"}, schema.SessionStarted{Source: "telegram", Reason: schema.StartNew})
	app("gateway-chats", schema.Meta{}, schema.GatewayChatOpened{Key: "telegram/1", Stream: "gateway-chat-telegram-x", Platform: "telegram", Chat: "1"})
	app("gateway-chat-telegram-x", schema.Meta{SessionID: "s1"}, schema.GatewaySessionBound{SessionID: "s1", Reason: "new"})
	app("gateway-pairing", schema.Meta{}, schema.PairingRevoked{Platform: "telegram", User: "9"})
	run := projections.NewRunner(store, zerolog.Nop(), db.Projection(sessions.NewModel()))
	if _, err := run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	list, err := sessions.List(ctx, db.Reader(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != "s1" || list[0].Source != "telegram" {
		t.Fatalf("sessions %+v", list)
	}
}
