package group

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/hermes-go/hermes/events"
)

// While a group commits, the requests queued meanwhile wait and become the
// next group, whole, in order; closing refuses what is still queued and
// anything queued after.
func TestGroupsAndClose(t *testing.T) {
	closing := make(chan struct{})
	entered := make(chan struct{})
	release := make(chan struct{})
	var mu sync.Mutex
	var groups [][]int
	var refused []int
	first := true
	w := Start(8, closing, func(g []int) {
		mu.Lock()
		groups = append(groups, append([]int(nil), g...))
		mu.Unlock()
		if first {
			first = false
			close(entered)
			<-release
		}
	}, func(r int) {
		mu.Lock()
		refused = append(refused, r)
		mu.Unlock()
	})
	ctx := context.Background()
	if err := w.Queue(ctx, 0); err != nil {
		t.Fatal(err)
	}
	<-entered
	for i := 1; i <= 5; i++ {
		if err := w.Queue(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	for {
		mu.Lock()
		n := len(groups)
		mu.Unlock()
		if n == 2 {
			break
		}
	}
	mu.Lock()
	if len(groups[0]) != 1 || len(groups[1]) != 5 || groups[1][0] != 1 || groups[1][4] != 5 {
		t.Fatalf("groups %v", groups)
	}
	mu.Unlock()
	close(closing)
	<-w.Done()
	if err := w.Queue(ctx, 9); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("queue after close: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	w2 := Start(1, make(chan struct{}), func([]int) {}, func(int) {})
	_ = w2.Queue(ctx, 1) // fills the writer or its buffer
	_ = w2.Queue(ctx, 2)
	if err := w2.Queue(cctx, 3); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("queue with an ended context: %v", err)
	}
	if len(refused) != 0 {
		t.Fatalf("refused %v with nothing queued at close", refused)
	}
}
