package toolrun

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
)

type fakeTool struct {
	run func(ctx context.Context) (string, error)
}

func (t fakeTool) Spec() model.ToolSpec { return model.ToolSpec{Name: "t"} }
func (t fakeTool) Flags() tool.Flags    { return tool.Flags{} }
func (t fakeTool) Run(ctx context.Context, _ json.RawMessage) (string, error) {
	return t.run(ctx)
}

func TestPool(t *testing.T) {
	sys := actors.NewSystem(zerolog.Nop())
	defer sys.Shutdown()
	p := NewPool(sys, 2, 300*time.Millisecond)
	ctx := context.Background()

	r := p.Execute(ctx, tool.Call{Name: "ok", Tool: fakeTool{func(context.Context) (string, error) { return "fine", nil }}})
	if r.Content != "fine" || r.Err != "" {
		t.Fatalf("ok: %+v", r)
	}
	r = p.Execute(ctx, tool.Call{Name: "boom", Tool: fakeTool{func(context.Context) (string, error) { panic("kaboom") }}})
	if !strings.Contains(r.Err, "tool boom panicked: kaboom") {
		t.Fatalf("panic: %+v", r)
	}
	r = p.Execute(ctx, tool.Call{Name: "slow", Tool: fakeTool{func(ctx context.Context) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}}})
	if !strings.Contains(r.Err, "timed out after 300ms") {
		t.Fatalf("timeout: %+v", r)
	}
	// Still serving after a panic and a timeout, at most 2 at once.
	var running, peak atomic.Int32
	done := make(chan tool.Result, 6)
	for range 6 {
		go func() {
			done <- p.Execute(ctx, tool.Call{Name: "count", Tool: fakeTool{func(context.Context) (string, error) {
				n := running.Add(1)
				if n > peak.Load() {
					peak.Store(n)
				}
				time.Sleep(30 * time.Millisecond)
				running.Add(-1)
				return "x", nil
			}}})
		}()
	}
	for range 6 {
		if r := <-done; r.Content != "x" {
			t.Fatalf("%+v", r)
		}
	}
	if peak.Load() != 2 {
		t.Fatalf("peak concurrency %d, want 2", peak.Load())
	}
	// Cancellation interrupts.
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	r = p.Execute(cctx, tool.Call{Name: "wait", Tool: fakeTool{func(ctx context.Context) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}}})
	if !r.Interrupted {
		t.Fatalf("cancel: %+v", r)
	}
}

// syncBuffer is a log writer the runner's goroutine and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type unknownMessage struct{}

// A message the runner does not know is logged with its type; its
// lifecycle messages are not.
func TestRunnerLogsUnhandled(t *testing.T) {
	sys := actors.NewSystem(zerolog.Nop())
	defer sys.Shutdown()
	var buf syncBuffer
	pid := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &runner{log: zerolog.New(&buf)} }))
	sys.Root.Send(pid, &unknownMessage{})
	if err := sys.Root.PoisonFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one warning, got %q", buf.String())
	}
	for _, want := range []string{`"level":"warn"`, `"message_type":"*toolrun.unknownMessage"`, "tool runner: message not handled"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("warning %s lacks %s", lines[0], want)
		}
	}
}

// registered counts the actors a system has registered.
func registered(sys *actor.ActorSystem) int {
	n := 0
	for _, m := range sys.ProcessRegistry.LocalPIDs.LocalPIDs {
		n += m.Count()
	}
	return n
}

// TestRunnersEnd: every call's runner is gone once the call is answered —
// one that answered, one that panicked, one abandoned past its deadline —
// so a session making thousands of calls keeps no actors.
func TestRunnersEnd(t *testing.T) {
	sys := actors.NewSystem(zerolog.Nop())
	defer sys.Shutdown()
	p := NewPool(sys, 4, 100*time.Millisecond)
	ctx := context.Background()
	p.Execute(ctx, tool.Call{Name: "warm", Tool: fakeTool{func(context.Context) (string, error) { return "", nil }}})
	time.Sleep(50 * time.Millisecond)
	before := registered(sys)
	for i := range 30 {
		var r tool.Result
		switch i % 3 {
		case 0:
			r = p.Execute(ctx, tool.Call{Name: "ok", Tool: fakeTool{func(context.Context) (string, error) { return "fine", nil }}})
		case 1:
			r = p.Execute(ctx, tool.Call{Name: "boom", Tool: fakeTool{func(context.Context) (string, error) { panic("kaboom") }}})
		case 2:
			r = p.Execute(ctx, tool.Call{Name: "slow", Tool: fakeTool{func(ctx context.Context) (string, error) {
				<-ctx.Done()
				return "", ctx.Err()
			}}})
		}
		if r.Content == "" && r.Err == "" {
			t.Fatalf("call %d: no answer %+v", i, r)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for registered(sys) != before {
		if time.Now().After(deadline) {
			t.Fatalf("%d actors registered after 30 calls, %d before", registered(sys), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
