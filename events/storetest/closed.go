package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/schema"
)

// testAppendsAfterClose checks that appends to a closed store fail with
// events.ErrClosed instead of waiting for ever, including many at once
// (once, an append could slip into the writer's queue after it stopped
// reading it). s must be open and is closed here.
func testAppendsAfterClose(t *testing.T, s events.Store) {
	t.Helper()
	ctx := context.Background()
	ev := schema.MustEnvelope(schema.Meta{SessionID: "closed"}, schema.UserMessageAdded{Content: "hi"})
	if _, err := s.Append(ctx, "session-closed", events.Any, ev); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	const n = 200
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := s.Append(ctx, "session-closed", events.Any, ev)
			errs <- err
		}()
	}
	deadline := time.After(30 * time.Second)
	for range n {
		select {
		case err := <-errs:
			if !errors.Is(err, events.ErrClosed) {
				t.Fatalf("append after close: %v, want events.ErrClosed", err)
			}
		case <-deadline:
			t.Fatal("an append after close is still waiting after 30 s")
		}
	}
}
