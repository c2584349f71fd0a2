package embedded_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// A stream read while appends to it commit sees one snapshot: its rows
// never run past the end it read (reported as damage before the two were
// read in one transaction).
func TestReadStreamBesideAppends(t *testing.T) {
	s, err := embedded.Open(filepath.Join(t.TempDir(), "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 300 {
			if _, err := s.Append(ctx, "session-x", events.Any, schema.MustEnvelope(schema.Meta{SessionID: "x"}, schema.UserMessageAdded{Content: "hi"})); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for reads := 0; ; reads++ {
		select {
		case <-done:
			if reads == 0 {
				t.Fatal("no read ran beside the appends")
			}
			return
		default:
		}
		if _, err := s.ReadStream(ctx, "session-x", events.Forward, 0, 0); err != nil {
			t.Fatalf("read %d beside appends: %v", reads, err)
		}
	}
}
