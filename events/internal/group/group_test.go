package group

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

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
	// The first request finds no commit running: it commits on its own
	// goroutine, so Queue returns only once its group is committed.
	queued := make(chan error, 1)
	go func() { queued <- w.Queue(ctx, 0) }()
	<-entered
	for i := 1; i <= 5; i++ {
		if err := w.Queue(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-queued:
		t.Fatalf("the first Queue returned (%v) before its commit did", err)
	default:
	}
	close(release)
	if err := <-queued; err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(groups) == 2
	})
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
	if len(refused) != 0 {
		t.Fatalf("refused %v with nothing queued at close", refused)
	}
}

// An append to an idle writer is committed on the appender's goroutine:
// no other goroutine runs the commit.
func TestIdleCommitsInline(t *testing.T) {
	var on []uint64
	w := Start(4, make(chan struct{}), func(g []int) { on = append(on, goid()) }, func(int) {})
	for i := range 3 {
		if err := w.Queue(context.Background(), i); err != nil {
			t.Fatal(err)
		}
	}
	me := goid()
	if len(on) != 3 || on[0] != me || on[1] != me || on[2] != me {
		t.Fatalf("commits ran on goroutines %v, want all on the caller's %d", on, me)
	}
}

// Many appenders at once: every request is committed exactly once, in
// groups no larger than the bound, and never two commits at a time.
func TestConcurrentAppendsExactlyOnce(t *testing.T) {
	const appenders, each, bound = 16, 200, 8
	var mu sync.Mutex
	seen := map[int]int{}
	var running, most int
	var inside sync.Mutex
	w := Start(bound, make(chan struct{}), func(g []int) {
		if !inside.TryLock() {
			t.Error("two commits ran at once")
			return
		}
		defer inside.Unlock()
		if len(g) > bound {
			t.Errorf("a group of %d, bound %d", len(g), bound)
		}
		mu.Lock()
		running++
		most = max(most, len(g))
		for _, r := range g {
			seen[r]++
		}
		mu.Unlock()
		runtime.Gosched()
	}, func(int) { t.Error("refused without closing") })
	var wg sync.WaitGroup
	for a := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := w.Queue(context.Background(), a*each+i); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == appenders*each
	})
	mu.Lock()
	defer mu.Unlock()
	for r, n := range seen {
		if n != 1 {
			t.Fatalf("request %d committed %d times", r, n)
		}
	}
	t.Logf("%d requests in %d commits, the largest group %d", appenders*each, running, most)
}

// Queue waits while the bound's worth of requests is queued behind a
// running commit, and gives up with its context.
func TestBoundAndContext(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	w := Start(2, make(chan struct{}), func(g []int) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
	}, func(int) {})
	go w.Queue(context.Background(), 0) // commits, held
	<-entered
	// The one being committed gave its slot back: two more fit.
	for i := 1; i <= 2; i++ {
		if err := w.Queue(context.Background(), i); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := w.Queue(ctx, 3); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a third queued behind a held commit: %v, want the context's error", err)
	}
	close(release)
}

// Closing while a commit runs: Done waits for it, and what is queued
// behind it is refused, not committed.
func TestCloseRefusesQueued(t *testing.T) {
	closing := make(chan struct{})
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	var mu sync.Mutex
	var committed, refused []int
	w := Start(4, closing, func(g []int) {
		mu.Lock()
		committed = append(committed, g...)
		mu.Unlock()
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
	}, func(r int) {
		mu.Lock()
		refused = append(refused, r)
		mu.Unlock()
	})
	go w.Queue(context.Background(), 0)
	<-entered
	w.Queue(context.Background(), 1)
	w.Queue(context.Background(), 2)
	close(closing)
	select {
	case <-w.Done():
		t.Fatal("Done before the running commit returned")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	<-w.Done()
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(refused)
	if !slices.Equal(committed, []int{0}) || !slices.Equal(refused, []int{1, 2}) {
		t.Fatalf("committed %v, refused %v; want [0] and [1 2]", committed, refused)
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}

// goid is the calling goroutine's id, read from its stack trace header.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	// "goroutine 123 [running]:"
	var id uint64
	for _, c := range b[len("goroutine "):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
