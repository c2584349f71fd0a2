package gateway_test

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/gateway"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/schema"
)

// within fails the run when f has not returned after d: a gateway that
// hangs is a failure, not a test that never ends.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		// A stuck gateway cannot be stopped either, so the test's
		// cleanup (which runs even on a panic) would wait until go
		// test's timeout: end the run here, with every goroutine's stack.
		fmt.Fprintf(os.Stderr, "--- FAIL: %s: %s: still waiting after %s (the gateway is stuck)\n", t.Name(), what, d)
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
		os.Exit(1)
	}
}

// hook is a front door whose deliveries hang while it is down (a webhook
// whose callback does not answer) and go through once it is up; it counts
// what it delivered, by reply.
type hook struct {
	ready chan struct{}

	mu        sync.Mutex
	inbox     gw.Inbox
	up        bool
	upCh      chan struct{}
	hanging   int
	delivered map[string]int // by ReplyID
}

func newHook() *hook {
	return &hook{ready: make(chan struct{}), upCh: make(chan struct{}), delivered: map[string]int{}}
}

func (h *hook) Name() string { return "hook" }

func (h *hook) Run(ctx context.Context, in gw.Inbox) error {
	h.mu.Lock()
	h.inbox = in
	h.mu.Unlock()
	close(h.ready)
	<-ctx.Done()
	return nil
}

func (h *hook) Send(ctx context.Context, out schema.Outbound) ([]string, error) {
	if out.Kind == schema.OutboundTyping || out.Kind == schema.OutboundDelta {
		return nil, nil
	}
	h.mu.Lock()
	up := h.up
	if !up {
		h.hanging++
	}
	h.mu.Unlock()
	if !up {
		select {
		case <-ctx.Done():
			h.mu.Lock()
			h.hanging--
			h.mu.Unlock()
			return nil, ctx.Err()
		case <-h.upCh:
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.delivered[out.ReplyID]++
	return []string{"d-" + out.ReplyID}, nil
}

func (h *hook) setUp() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.up {
		h.up = true
		close(h.upCh)
	}
}

func (h *hook) hangs() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hanging > 0
}

func (h *hook) post(t *testing.T, in schema.Inbound) {
	t.Helper()
	h.mu.Lock()
	inbox := h.inbox
	h.mu.Unlock()
	if err := inbox(context.Background(), in); err != nil {
		t.Fatal(err)
	}
}

func answers(n int) []llmtest.Reply {
	out := make([]llmtest.Reply, n)
	for i := range out {
		out[i] = llmtest.Reply{Content: "answer"}
	}
	return out
}

// TestSlowPlatformBlocksNoOtherPlatform: while one platform's delivery
// hangs, a platform starting after it comes up and is answered, and the
// hanging delivery's outcome is recorded once it ends. Over the in-process
// bus (watermill's GoChannel) the late platform's subscription waited for
// the hanging delivery, and the delivery's outcome then waited for the
// subscription: neither platform moved again.
func TestSlowPlatformBlocksNoOtherPlatform(t *testing.T) {
	rig := gatewaytest.Start(t, gatewaytest.Options{Script: answers(2), Config: gateway.Config{Auth: gateway.Auth{AllowAll: true}}})
	h := newHook()
	defer h.setUp()
	rig.Serve(h, nil)
	<-h.ready
	h.post(t, schema.Inbound{Chat: "cb1", User: "u1", MessageID: "1", Text: "hi", Verified: true})
	gatewaytest.WaitFor(t, "the hook's delivery to hang", h.hangs)

	late := gatewaytest.NewChat("late")
	within(t, 10*time.Second, "the late platform's start", func() { rig.Serve(late, nil) })
	late.Post(t, gatewaytest.DM("u2", "2", "hello"))
	within(t, 10*time.Second, "the late platform's answer", func() { late.WaitReplies(t, 1) })

	h.setUp()
	gatewaytest.WaitFor(t, "both replies recorded as delivered", func() bool {
		return gatewaytest.CountTypes(t, rig.Store, "GatewayMessageDelivered") == 2
	})
}

// TestRestartsWithPendingDeliveries restarts a gateway again and again
// while answers wait for a front door that is down (its deliveries hang):
// each time another platform still starts and is answered, and once the
// front door is up every waiting answer is delivered exactly once.
func TestRestartsWithPendingDeliveries(t *testing.T) {
	const pending, restarts = 30, 6
	dir := t.TempDir()
	cfg := gateway.Config{Auth: gateway.Auth{AllowAll: true}, TypingEvery: time.Hour}
	rig := gatewaytest.Start(t, gatewaytest.Options{Dir: dir, Script: answers(pending), Config: cfg})
	h := newHook()
	rig.Serve(h, nil)
	<-h.ready
	for i := range pending {
		h.post(t, schema.Inbound{Chat: fmt.Sprint("cb", i), User: fmt.Sprint("u", i), MessageID: "1", Text: "hi", Verified: true})
	}
	gatewaytest.WaitFor(t, "every answer recorded", func() bool {
		return gatewaytest.CountTypes(t, rig.Store, "GatewayReplyRequested") == pending
	})
	gatewaytest.WaitFor(t, "a delivery to hang", h.hangs)
	within(t, 30*time.Second, "the gateway's stop", rig.Stop)

	for run := 1; run <= restarts; run++ {
		rig := gatewaytest.Start(t, gatewaytest.Options{Dir: dir, Script: answers(1), Config: cfg})
		h := newHook()
		rig.Serve(h, nil)
		<-h.ready
		gatewaytest.WaitFor(t, "a sent-again answer's delivery to hang", h.hangs)
		late := gatewaytest.NewChat("late")
		within(t, 10*time.Second, fmt.Sprintf("run %d: the late platform's start", run), func() { rig.Serve(late, nil) })
		late.Post(t, gatewaytest.DM("v", fmt.Sprint(run), "hello"))
		within(t, 10*time.Second, fmt.Sprintf("run %d: the late platform's answer", run), func() { late.WaitReplies(t, 1) })
		within(t, 30*time.Second, fmt.Sprintf("run %d: the gateway's stop", run), rig.Stop)
	}

	rig = gatewaytest.Start(t, gatewaytest.Options{Dir: dir, Config: cfg})
	h = newHook()
	h.setUp()
	rig.Serve(h, nil)
	gatewaytest.WaitFor(t, "every waiting answer delivered", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.delivered) == pending
	})
	gatewaytest.WaitFor(t, "every delivery recorded", func() bool {
		return gatewaytest.CountTypes(t, rig.Store, "GatewayMessageDelivered") == pending+restarts
	})
	time.Sleep(200 * time.Millisecond)
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, n := range h.delivered {
		if n != 1 {
			t.Errorf("reply %s delivered %d times", id, n)
		}
	}
}
