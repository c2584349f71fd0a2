package projections_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/hermes-go/hermes/projections"
)

// TestLogsSeen: what a home's projections.db remembers of the log, read
// without writing: nothing before it exists, then the log caught up to.
func TestLogsSeen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "projections.db")
	if seen, err := projections.LogsSeen(ctx, path); err != nil || len(seen) != 0 {
		t.Fatalf("no projections.db: %v %v", seen, err)
	}
	e := openEnv(t, dir)
	if err := writeSession(ctx, e.store, rand.New(rand.NewPCG(1, 2)), "s1", 3); err != nil {
		t.Fatal(err)
	}
	if _, err := e.run.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	head, _ := e.store.Head(ctx)
	seen, err := projections.LogsSeen(ctx, path)
	if err != nil || len(seen) != 1 || seen[0].Log != e.store.Identity().ID || seen[0].Position != head {
		t.Fatalf("seen %+v (%v), want log %s up to %d", seen, err, e.store.Identity().ID, head)
	}
}
