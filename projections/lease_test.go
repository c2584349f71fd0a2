package projections_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/projections"
)

// sharedState is a projection's state that several processes write (as
// the tables of a PostgreSQL projections database are): it records which
// runner applied each event, and refuses spans that do not continue its
// checkpoint, as the table projections do in their write transaction.
type sharedState struct {
	mu  sync.Mutex
	cp  uint64
	by  map[uint64]string // position → the runner that applied it
	dup int               // events applied a second time
}

// sharedView is one process's handle on a sharedState.
type sharedView struct {
	st  *sharedState
	who string
}

func (v *sharedView) Name() string { return "shared" }
func (v *sharedView) Shared() bool { return true }
func (v *sharedView) Checkpoint(context.Context) (uint64, error) {
	v.st.mu.Lock()
	defer v.st.mu.Unlock()
	return v.st.cp, nil
}
func (v *sharedView) Reset(context.Context) error {
	v.st.mu.Lock()
	defer v.st.mu.Unlock()
	v.st.cp, v.st.by = 0, map[uint64]string{}
	return nil
}
func (v *sharedView) Apply(ctx context.Context, b []projections.Event) error {
	return v.ApplySpan(ctx, projections.Span{After: 0, Upto: b[len(b)-1].Position, Events: b})
}
func (v *sharedView) Origin(context.Context) (string, error) { return "", nil }
func (v *sharedView) ApplySpan(_ context.Context, sp projections.Span) error {
	v.st.mu.Lock()
	defer v.st.mu.Unlock()
	if v.st.cp < sp.After {
		return &projections.GapError{Projection: "shared", Checkpoint: v.st.cp, After: sp.After}
	}
	for _, ev := range sp.Events {
		if ev.Position <= v.st.cp {
			continue
		}
		if _, ok := v.st.by[ev.Position]; ok {
			v.st.dup++
		}
		v.st.by[ev.Position] = v.who
	}
	v.st.cp = max(v.st.cp, sp.Upto)
	return nil
}

// appliedBy counts the events each runner applied after position from.
func (s *sharedState) appliedBy(from uint64) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for pos, who := range s.by {
		if pos > from {
			out[who]++
		}
	}
	return out
}

// memLeases is an in-process stand-in for the store's leases (the real
// ones, PostgreSQL advisory locks, are tested in events/postgres): kill
// ends a holder's lease as a broken connection does.
type memLeases struct {
	mu     sync.Mutex
	holder map[string]string
	leases map[string]*memLease
	// dead holders cannot take leases (a killed process).
	dead map[string]bool
}

type memLease struct {
	m         *memLeases
	name, who string
	lost      chan struct{}
	once      sync.Once
}

func (l *memLease) Lost() <-chan struct{} { return l.lost }
func (l *memLease) Release(context.Context) error {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	if l.m.leases[l.name] == l {
		delete(l.m.leases, l.name)
		delete(l.m.holder, l.name)
	}
	return nil
}

type memLeaser struct {
	m   *memLeases
	who string
}

func (s memLeaser) TryLease(_ context.Context, name string) (projections.Lease, bool, error) {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if s.m.dead[s.who] {
		return nil, false, fmt.Errorf("%s is dead", s.who)
	}
	if _, ok := s.m.holder[name]; ok {
		return nil, false, nil
	}
	l := &memLease{m: s.m, name: name, who: s.who, lost: make(chan struct{})}
	s.m.holder[name], s.m.leases[name] = s.who, l
	return l, true, nil
}

func (s memLeaser) LeaseHolder(_ context.Context, name string) (string, error) {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	return s.m.holder[name], nil
}

func (m *memLeases) kill(name string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.leases[name]
	delete(m.leases, name)
	delete(m.holder, name)
	m.dead[l.who] = true
	l.once.Do(func() { close(l.lost) })
	return l.who
}

// revive lets a killed holder take leases again.
func (m *memLeases) revive(who string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.dead, who)
}

// TestLeasedRunners: two processes' runners follow one log and feed one
// shared projection. One of them holds the lease and feeds it alone; when
// its lease is lost the other takes over, and when that one stops it
// hands the lease back; every event is applied exactly once throughout.
func TestLeasedRunners(t *testing.T) {
	ctx := context.Background()
	store, err := embedded.Open(filepath.Join(t.TempDir(), "events.db"), embedded.WithPollInterval(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	st := &sharedState{by: map[uint64]string{}}
	leases := &memLeases{holder: map[string]string{}, leases: map[string]*memLease{}, dead: map[string]bool{}}
	name := projections.LeaseName("shared")
	start := func(who string) (*projections.Runner, context.CancelFunc, chan error) {
		r := projections.NewRunner(store, zerolog.Nop(), &sharedView{st: st, who: who}).
			WithLeases(memLeaser{m: leases, who: who}, 10*time.Millisecond)
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- r.Run(rctx) }()
		return r, cancel, done
	}
	rng := rand.New(rand.NewPCG(7, 7))
	write := func(n int) uint64 {
		for i := range n {
			if err := writeSession(ctx, store, rng, fmt.Sprintf("s%d-%d", rng.Int(), i), 2); err != nil {
				t.Fatal(err)
			}
		}
		head, err := store.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return head
	}
	caughtUp := func(head uint64) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			st.mu.Lock()
			cp := st.cp
			st.mu.Unlock()
			if cp >= head {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the projection reached %d of %d", cp, head)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	runA, stopA, doneA := start("a")
	_, stopB, doneB := start("b")
	head := write(20)
	caughtUp(head)
	first, _ := memLeaser{m: leases}.LeaseHolder(ctx, name)
	if by := st.appliedBy(0); len(by) != 1 || by[first] == 0 {
		t.Fatalf("events applied by %v; the lease holder is %q", by, first)
	}
	if sts, err := runA.Status(ctx); err != nil || sts[0].FedBy != first {
		t.Fatalf("status %+v %v, want fed by %s", sts, err, first)
	}

	// The holder's lease ends (its connection to the store broke): the
	// other runner feeds the projection from where it stood.
	if who := leases.kill(name); who != first {
		t.Fatalf("killed the lease of %s, want %s", who, first)
	}
	second := map[string]string{"a": "b", "b": "a"}[first]
	deadline := time.Now().Add(30 * time.Second)
	for h, _ := (memLeaser{m: leases}).LeaseHolder(ctx, name); h != second; h, _ = (memLeaser{m: leases}).LeaseHolder(ctx, name) {
		if time.Now().After(deadline) {
			t.Fatalf("the lease went to %q, want %s", h, second)
		}
		time.Sleep(5 * time.Millisecond)
	}
	mark := head
	head = write(20)
	caughtUp(head)
	if by := st.appliedBy(mark); len(by) != 1 || by[second] == 0 {
		t.Fatalf("after the lease moved, events applied by %v, want %s alone", by, second)
	}

	// The second holder stops: it releases the lease, and the first
	// (alive again: a process that reconnected) takes it back.
	leases.revive(first)
	stops := map[string]context.CancelFunc{"a": stopA, "b": stopB}
	dones := map[string]chan error{"a": doneA, "b": doneB}
	stops[second]()
	<-dones[second]
	mark = head
	head = write(20)
	caughtUp(head)
	if by := st.appliedBy(mark); len(by) != 1 || by[first] == 0 {
		t.Fatalf("after %s stopped, events applied by %v, want %s alone", second, by, first)
	}
	stops[first]()
	<-dones[first]

	st.mu.Lock()
	defer st.mu.Unlock()
	if st.dup != 0 {
		t.Fatalf("%d events applied twice", st.dup)
	}
	if h, _ := (memLeaser{m: leases}).LeaseHolder(ctx, name); h != "" {
		t.Fatalf("the lease is still held by %q after both runners stopped", h)
	}
}
