package todo

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

func TestTodoStateComesFromEvents(t *testing.T) {
	store, err := embedded.Open(filepath.Join(t.TempDir(), "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	record := func(ctx context.Context, ps ...schema.Payload) error {
		var envs []schema.Envelope
		for _, p := range ps {
			envs = append(envs, schema.MustEnvelope(schema.Meta{SessionID: "s"}, p))
		}
		_, err := store.Append(ctx, events.SessionStream("s"), events.Any, envs...)
		return err
	}
	newCtx := func() context.Context {
		return tool.WithEnv(context.Background(), &tool.Env{SessionID: "s", Record: record, Values: tool.NewSessionValues()})
	}
	tool := Tool{Store: store}
	run := func(ctx context.Context, args string) string {
		out, err := tool.Run(ctx, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		return out
	}
	ctx := newCtx()
	if out := run(ctx, `{}`); out != "the task list is empty" {
		t.Fatal(out)
	}
	run(ctx, `{"todos":[{"id":"1","content":"read code","status":"in_progress"},{"id":"2","content":"fix bug","status":"pending"}]}`)
	run(ctx, `{"todos":[{"id":"1","status":"completed"},{"id":"3","content":"write test"}],"merge":true}`)
	// A new actor (fresh session values) recovers the list from events.
	out := run(newCtx(), `{}`)
	if out != "[x] 1. read code\n[ ] 2. fix bug\n[ ] 3. write test\n(1 of 3 done)" {
		t.Fatalf("recovered %q", out)
	}
	if _, err := tool.Run(ctx, json.RawMessage(`{"todos":[{"id":"1","content":"x","status":"someday"}]}`)); err == nil || !strings.Contains(err.Error(), "status must be") {
		t.Fatalf("bad status: %v", err)
	}
}
