// Package gatewaytest runs the whole gateway — the router, a session
// manager, the embedded event store, a scripted model server and a real bus
// (the in-process GoChannel or NATS JetStream) — for the tests and
// benchmarks of platform adapters and buses, and gives them a test platform
// (Chat) that stands in for a chat service: it publishes what a test says
// a user sent and collects what the gateway sends back, through the same
// adapter plumbing (gw.Served) as a real platform.
package gatewaytest

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/actors/toolrun"
	"github.com/hermes-go/hermes/adapters/bus"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
)

// Options configure a Rig.
type Options struct {
	// Dir holds the event store (default: a temporary directory).
	Dir string
	// BusURL is the router's bus: "" for GoChannel, nats://… for JetStream.
	BusURL string
	// Config is the router's configuration; NewSession defaults to a new
	// session whose source is the platform.
	Config gateway.Config
	// LLM is the model server (default: llmtest.New(Script...)).
	LLM    *llmtest.Server
	Script []llmtest.Reply
	// Tools the sessions may call.
	Tools []tool.Tool
	// Log defaults to zerolog.Nop().
	Log *zerolog.Logger
	// EditEvery paces the previews of the platforms Serve serves
	// (gw.Served.EditEvery).
	EditEvery time.Duration
	// WrapSessions, when set, wraps the session manager the router uses
	// (to watch or time its turns).
	WrapSessions func(gateway.Sessions) gateway.Sessions
}

// Rig is a running gateway.
type Rig struct {
	Store    *embedded.Store
	LLM      *llmtest.Server
	Sessions *session.Manager
	Sys      *actor.ActorSystem
	// Bus is the bus of platforms served with Serve(p, nil): over NATS a
	// connection apart from the router's, as an adapter process has;
	// GoChannel is one in-process bus that all share.
	Bus *bus.Bus

	tb     testing.TB
	opts   Options
	log    zerolog.Logger
	ownLLM bool

	mu          sync.Mutex
	router      *gateway.Router
	stopRouter  func()
	platforms   []func()
	stopOnce    sync.Once
	routerAlive bool
}

// Start opens the store, starts the session manager and the router, and
// returns once the router has subscribed. Everything stops when the test
// ends (or on Stop).
func Start(tb testing.TB, o Options) *Rig {
	tb.Helper()
	if o.Dir == "" {
		o.Dir = tb.TempDir()
	}
	log := zerolog.Nop()
	if o.Log != nil {
		log = *o.Log
	}
	store, err := embedded.Open(filepath.Join(o.Dir, "events.db"))
	if err != nil {
		tb.Fatal(err)
	}
	r := &Rig{Store: store, LLM: o.LLM, tb: tb, opts: o, log: log}
	if r.LLM == nil {
		r.LLM, r.ownLLM = llmtest.New(o.Script...), true
	}
	if o.Config.NewSession == nil {
		o.Config.NewSession = func(ctx context.Context, platform string) (string, error) {
			id := uuid.NewString()
			return id, session.Create(ctx, store, id, session.Start{Source: platform, Model: "gpt-4o-mini", System: "You are Hermes."})
		}
		r.opts.Config = o.Config
	}
	if r.Bus, err = bus.Open(o.BusURL, log); err != nil {
		tb.Fatal(err)
	}
	r.Sys = actors.NewSystem(log)
	r.Sessions = session.NewManager(r.Sys, session.Deps{Store: store, Log: log,
		Provider: openai.NewChat(openai.Options{BaseURL: r.LLM.URL + "/v1"}),
		Tools:    tool.NewTools(o.Tools...), Exec: toolrun.NewPool(r.Sys, 8, 30*time.Second),
		Cfg: agent.Config{Model: "gpt-4o-mini"}, MaxTurns: 10, Asker: r})
	tb.Cleanup(r.Stop)
	r.StartRouter()
	return r
}

// Ask reaches the chat of the session asking, through the current router
// (a router restarted by the test replaces the one the sessions started
// with).
func (r *Rig) Ask(ctx context.Context, q tool.Question) (string, error) {
	r.mu.Lock()
	rt := r.router
	r.mu.Unlock()
	if rt == nil {
		return "", tool.ErrNoAsker
	}
	return rt.Asker().Ask(ctx, q)
}

// Router is the running router.
func (r *Rig) Router() *gateway.Router {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.router
}

// StartRouter starts a router and waits until it has subscribed. Over
// NATS the router gets a bus connection of its own, as a new gateway
// process would; GoChannel is one in-process bus that all share.
func (r *Rig) StartRouter() {
	r.tb.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.routerAlive {
		r.tb.Fatal("gatewaytest: the router is already running")
	}
	rb := r.Bus
	if r.opts.BusURL != "" {
		var err error
		if rb, err = bus.Open(r.opts.BusURL, r.log); err != nil {
			r.tb.Fatal(err)
		}
	}
	rt := gateway.New(r.Store, rb.Transport, r.Sys, r.opts.Config, r.log)
	rt.Sessions = r.Sessions
	if r.opts.WrapSessions != nil {
		rt.Sessions = r.opts.WrapSessions(r.Sessions)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	select {
	case <-rt.Ready():
	case err := <-done:
		cancel()
		r.tb.Fatalf("gatewaytest: router: %v", err)
	}
	r.router, r.routerAlive = rt, true
	own := rb != r.Bus
	r.stopRouter = func() {
		cancel()
		<-done
		if own {
			rb.Close()
		}
	}
}

// StopRouter stops the router (and, over NATS, closes its connection) while
// the platforms keep running: what they publish meanwhile waits on the bus.
func (r *Rig) StopRouter() {
	r.mu.Lock()
	stop := r.stopRouter
	r.stopRouter, r.routerAlive, r.router = nil, false, nil
	r.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// Serve connects p to the bus b (nil: the router's) with gw.Served until
// the rig stops, and returns once p's Run has been called when p is a
// *Chat (other platforms signal their own readiness).
func (r *Rig) Serve(p gw.Platform, b *bus.Bus) *gw.Served {
	if b == nil {
		b = r.Bus
	}
	s := gw.NewServed(p, b, r.log)
	s.EditEvery = r.opts.EditEvery
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(ctx) }()
	r.mu.Lock()
	r.platforms = append(r.platforms, func() { cancel(); <-done })
	r.mu.Unlock()
	if c, ok := p.(*Chat); ok {
		<-c.ready
	}
	return s
}

// OpenBus opens another connection to the rig's bus (over NATS: a new
// connection, as a separate adapter process has; GoChannel: the same bus).
// It is closed when the rig stops.
func (r *Rig) OpenBus() *bus.Bus {
	r.tb.Helper()
	if r.opts.BusURL == "" {
		return r.Bus
	}
	b, err := bus.Open(r.opts.BusURL, r.log)
	if err != nil {
		r.tb.Fatal(err)
	}
	r.mu.Lock()
	// Platforms stop in reverse order of their start: this runs after
	// those served on b.
	r.platforms = append(r.platforms, func() { b.Close() })
	r.mu.Unlock()
	return b
}

// Stop stops the platforms, the router, the sessions and the store.
func (r *Rig) Stop() {
	r.stopOnce.Do(func() {
		r.mu.Lock()
		ps := r.platforms
		r.platforms = nil
		r.mu.Unlock()
		for i := len(ps) - 1; i >= 0; i-- {
			ps[i]()
		}
		r.StopRouter()
		r.Sessions.Shutdown()
		r.Sys.Shutdown()
		r.Bus.Close()
		if r.ownLLM {
			r.LLM.Close()
		}
		r.Store.Close()
	})
}

// CountTypes counts the events of type typ in the whole store.
func CountTypes(tb testing.TB, store events.Store, typ string) int {
	tb.Helper()
	n := 0
	for _, rec := range all(tb, store) {
		if rec.Type == typ {
			n++
		}
	}
	return n
}

// all reads the whole log, page by page (ReadAll returns at most a page).
func all(tb testing.TB, store events.Store) []events.Recorded {
	tb.Helper()
	var out []events.Recorded
	var after uint64
	for {
		rs, err := store.ReadAll(context.Background(), after, 1000)
		if err != nil {
			tb.Fatal(err)
		}
		if len(rs) == 0 {
			return out
		}
		out = append(out, rs...)
		after = rs[len(rs)-1].Position
	}
}

// Payloads returns every event payload of the store, one per line.
func Payloads(tb testing.TB, store events.Store) string {
	tb.Helper()
	var b strings.Builder
	for _, rec := range all(tb, store) {
		b.Write(rec.Payload)
		b.WriteByte('\n')
	}
	return b.String()
}

// WaitFor polls cond until it holds, failing the test after 20 seconds.
func WaitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Fatalf("waited 20s for %s", what)
}
