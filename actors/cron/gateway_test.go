package cron_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/cron"
	"github.com/hermes-go/hermes/actors/cron/crontest"
	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/actors/toolrun"
	"github.com/hermes-go/hermes/adapters/bus"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// chatPlatform is the test's side of a chat platform on the real bus
// (through gw.Served, as every adapter is): it records what it is sent
// and refuses chat "gone" for good, as Telegram does a chat that no
// longer exists.
type chatPlatform struct {
	mu    sync.Mutex
	sent  []schema.Outbound
	ready chan struct{}
	// in hands the gateway what people in the chat send.
	in gw.Inbox
	// fails is how many more sends to a chat fail for a passing reason
	// (a negative count: every send).
	fails map[string]int
}

func (p *chatPlatform) Name() string { return "testchat" }
func (p *chatPlatform) Run(ctx context.Context, in gw.Inbox) error {
	p.mu.Lock()
	p.in = in
	p.mu.Unlock()
	close(p.ready)
	<-ctx.Done()
	return nil
}
func (p *chatPlatform) Send(_ context.Context, out schema.Outbound) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if out.Chat == "gone" {
		return nil, &gw.PermanentError{Err: errors.New("400 Bad Request: chat not found")}
	}
	if n := p.fails[out.Chat]; n != 0 {
		p.fails[out.Chat] = n - 1
		return nil, &gw.RetryAfterError{Err: errors.New("502 Bad Gateway"), After: time.Millisecond}
	}
	p.sent = append(p.sent, out)
	return []string{"m" + string(rune('0'+len(p.sent)))}, nil
}
func (p *chatPlatform) replies() []schema.Outbound {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]schema.Outbound(nil), p.sent...)
}

// TestDeliveryToChatsThroughTheGateway: jobs fire on a fake clock inside
// a gateway (the real router, bus and adapter plumbing); their answers
// reach a chat given as PLATFORM:CHAT and the chat a job was created from
// (origin, with its thread); the adapter's acknowledgements come back
// through the router's hook and are recorded as JobDelivered /
// JobDeliveryFailed; a platform the gateway does not run is left for a
// gateway that runs it, and fails when none took it within the hand-over.
func TestDeliveryToChatsThroughTheGateway(t *testing.T) {
	dir := t.TempDir()
	store := openStore(t, dir)
	log := zerolog.Nop()
	sys := actors.NewSystem(log)
	defer sys.Shutdown()
	b, err := bus.Open("", log)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	srv := llmtest.New()
	defer srv.Close()
	clock := crontest.NewClock(t0)
	jobs := cron.NewJobs(store, clock.Now)
	plat := &chatPlatform{ready: make(chan struct{})}
	sched := cron.New(store, jobs, sys, cron.Config{Clock: clock, OutputDir: filepath.Join(dir, "output"), Bus: bus.OutboundPublisher{Bus: b},
		Platforms: func() []string { return []string{"testchat"} }, Wrap: true,
		Agent: &stubAgent{reply: func(_ context.Context, job *cron.Job, _ string) (string, error) {
			return "Stand-up in 10 minutes (" + job.Spec.Name + ")", nil
		}}})
	router := gateway.New(store, b.Transport, sys, gateway.Config{Auth: gateway.Auth{AllowAll: true}, Acks: sched.Ack}, log)
	router.Sessions = session.NewManager(sys, session.Deps{Store: store, Log: log, Provider: openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"}),
		Tools: tool.NewTools(), Exec: toolrun.NewPool(sys, 2, time.Minute), Cfg: agent.Config{Model: "m"}, MaxTurns: 2})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Add(3)
	go func() { defer wg.Done(); router.Run(ctx) }()
	<-router.Ready()
	go func() { defer wg.Done(); gw.NewServed(plat, b, log).Serve(ctx) }()
	<-plat.ready
	go func() { defer wg.Done(); sched.Run(ctx) }()
	<-sched.Ready()

	named := mustCreate(t, jobs, schema.JobSpec{Name: "named", Schedule: "every 1h", Prompt: "p", Deliver: "testchat:c42"})
	origin := mustCreate(t, jobs, schema.JobSpec{Name: "origin", Schedule: "every 1h", Prompt: "p",
		Origin: &schema.JobOrigin{Platform: "testchat", Chat: "c7", Thread: "t1", SessionID: "s"}})
	gone := mustCreate(t, jobs, schema.JobSpec{Name: "gone", Schedule: "every 1h", Prompt: "p", Deliver: "testchat:gone,local"})
	elsewhere := mustCreate(t, jobs, schema.JobSpec{Name: "elsewhere", Schedule: "every 1h", Prompt: "p", Deliver: "slack:C1"})
	waitFor(t, "the timers", func() bool { return clock.NextAt().Equal(t0.Add(time.Hour)) })
	clock.Set(t0.Add(time.Hour))
	for _, j := range []*cron.Job{named, origin, gone} {
		waitFor(t, "job "+j.Spec.Name+" delivered", func() bool { return settled(t, store, j.ID, 1) })
	}
	handedOver(t, clock, store, elsewhere.ID)
	got := map[string]schema.Outbound{}
	for _, o := range plat.replies() {
		got[o.Chat] = o
	}
	if len(got) != 2 {
		t.Fatalf("the platform got %+v", plat.replies())
	}
	n := got["c42"]
	if n.Kind != "reply" || n.Key != "cron/"+named.ID || !strings.Contains(n.Text, "Stand-up in 10 minutes (named)") || !strings.HasPrefix(n.Text, "⏰ named") {
		t.Fatalf("reply to c42 %+v", n)
	}
	if o := got["c7"]; o.Thread != "t1" || !strings.Contains(o.Text, "(origin)") {
		t.Fatalf("reply to the origin %+v", o)
	}
	nr := runs(t, store, named.ID)[0]
	if oc := nr.Outcomes["testchat:c42"]; !oc.Delivered {
		t.Fatalf("named outcome %+v", nr.Outcomes)
	}
	if oc := runs(t, store, origin.ID)[0].Outcomes["testchat:c7:t1"]; !oc.Delivered {
		t.Fatalf("origin outcome %+v", runs(t, store, origin.ID)[0].Outcomes)
	}
	gr := runs(t, store, gone.ID)[0]
	if oc := gr.Outcomes["testchat:gone"]; oc.Delivered || !strings.Contains(oc.Error, "chat not found") || !gr.Outcomes["local"].Delivered {
		t.Fatalf("gone outcomes %+v", gr.Outcomes)
	}
	if oc := runs(t, store, elsewhere.ID)[0].Outcomes["slack:C1"]; !strings.Contains(oc.Error, "platform slack is not running in this gateway") ||
		!strings.Contains(oc.Error, "no process running slack delivered it within 10m0s") {
		t.Fatalf("elsewhere outcome %+v", oc)
	}
	// The platform message ids are kept.
	rs, _ := store.ReadStream(context.Background(), cron.JobStream(named.ID), 0, 0, 0)
	found := false
	for _, r := range rs {
		if r.Type == "JobDelivered" && strings.Contains(string(r.Payload), `"platform_message_ids":["m`) {
			found = true
		}
	}
	if !found {
		t.Fatal("JobDelivered lacks the platform's message ids")
	}
}

// cronGateway is a gateway (router, bus, plat) with a scheduler inside on
// clock, and its jobs.
type cronGateway struct {
	store  *embedded.Store
	jobs   *cron.Jobs
	sched  *cron.Scheduler
	plat   *chatPlatform
	leases session.Leaser
}

func startCronGateway(t *testing.T, dir string, clock *crontest.Clock, plat *chatPlatform, a cron.Agent) *cronGateway {
	t.Helper()
	store := openStore(t, dir)
	log := zerolog.Nop()
	sys := actors.NewSystem(log)
	t.Cleanup(sys.Shutdown)
	b, err := bus.Open("", log)
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New()
	jobs := cron.NewJobs(store, clock.Now)
	// The runs' leases are shared as a home's are between processes
	// (another scheduler of the test, standing in for a cron daemon,
	// takes them too).
	leases := cron.NewMemLeases()
	sched := cron.New(store, jobs, sys, cron.Config{Clock: clock, OutputDir: filepath.Join(dir, "output"), Bus: bus.OutboundPublisher{Bus: b},
		Platforms: func() []string { return []string{"testchat"} }, Agent: a, Leases: leases,
		Home: func(ctx context.Context, platform string) (string, string, bool, error) {
			h, ok, err := gateway.Home(ctx, store, platform)
			return h.Chat, h.Thread, ok, err
		}})
	router := gateway.New(store, b.Transport, sys, gateway.Config{Auth: gateway.Auth{AllowAll: true}, Acks: sched.Ack}, log)
	router.Sessions = session.NewManager(sys, session.Deps{Store: store, Log: log, Provider: openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"}),
		Tools: tool.NewTools(), Exec: toolrun.NewPool(sys, 2, time.Minute), Cfg: agent.Config{Model: "m"}, MaxTurns: 2})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait(); b.Close(); srv.Close() })
	wg.Add(3)
	go func() { defer wg.Done(); router.Run(ctx) }()
	<-router.Ready()
	go func() { defer wg.Done(); gw.NewServed(plat, b, log).Serve(ctx) }()
	<-plat.ready
	go func() { defer wg.Done(); sched.Run(ctx) }()
	<-sched.Ready()
	return &cronGateway{store: store, jobs: jobs, sched: sched, plat: plat, leases: leases}
}

// TestDeliveryRetriedPerPolicy: a delivery the platform refuses for a
// passing reason is tried again after the backoff and delivered once; one
// refused every time gets cron.delivery_attempts attempts and then is a
// failure, and the run is not "ok" in the history.
func TestDeliveryRetriedPerPolicy(t *testing.T) {
	clock := crontest.NewClock(t0)
	plat := &chatPlatform{ready: make(chan struct{}), fails: map[string]int{"flaky": gw.MaxAttempts, "down": -1}}
	g := startCronGateway(t, t.TempDir(), clock, plat, &stubAgent{reply: func(context.Context, *cron.Job, string) (string, error) { return "the report", nil }})
	flaky := mustCreate(t, g.jobs, schema.JobSpec{Name: "flaky", Schedule: "every 1h", Prompt: "p", Deliver: "testchat:flaky"})
	down := mustCreate(t, g.jobs, schema.JobSpec{Name: "down", Schedule: "every 1h", Prompt: "p", Deliver: "testchat:down"})
	waitFor(t, "the timers", func() bool { return clock.NextAt().Equal(t0.Add(time.Hour)) })
	clock.Set(t0.Add(time.Hour))
	end := clock.Now().Add(20 * time.Minute)
	for !settled(t, g.store, flaky.ID, 1) || !settled(t, g.store, down.ID, 1) {
		if clock.Now().After(end) {
			t.Fatalf("still pending 20 min on: flaky %+v; down %+v", runs(t, g.store, flaky.ID)[0], runs(t, g.store, down.ID)[0])
		}
		clock.Advance(time.Minute)
		time.Sleep(30 * time.Millisecond)
	}
	f := runs(t, g.store, flaky.ID)[0]
	if f.Result() != "ok" || !f.Outcomes["testchat:flaky"].Delivered || f.Attempts["testchat:flaky"] != 1 || !strings.Contains(f.Failed["testchat:flaky"].Error, "502") {
		t.Fatalf("flaky run: %s, outcomes %+v, failed attempts %v %+v", f.Result(), f.Outcomes, f.Attempts, f.Failed)
	}
	sent := 0
	for _, o := range plat.replies() {
		if o.Chat == "flaky" {
			sent++
		}
	}
	if sent != 1 {
		t.Fatalf("the flaky chat got the report %d times", sent)
	}
	d := runs(t, g.store, down.ID)[0]
	if d.Result() != "ok, delivery failed" || d.Attempts["testchat:down"] != cron.DefaultDeliveryAttempts-1 ||
		!strings.Contains(d.Outcomes["testchat:down"].Error, "attempt 3 of 3: not tried again") {
		t.Fatalf("down run: %s, outcomes %+v, failed attempts %v", d.Result(), d.Outcomes, d.Attempts)
	}
}

// TestDeliveryHandedToTheGateway: a run made by a process that runs no
// gateway (`hermes cron run`, a cron daemon) leaves its platform delivery
// to the gateway's scheduler, which delivers it once; the run is "ok".
func TestDeliveryHandedToTheGateway(t *testing.T) {
	dir := t.TempDir()
	clock := crontest.NewClock(t0)
	plat := &chatPlatform{ready: make(chan struct{})}
	a := &stubAgent{reply: func(context.Context, *cron.Job, string) (string, error) { return "from the daemon", nil }}
	g := startCronGateway(t, dir, clock, plat, a)
	job := mustCreate(t, g.jobs, schema.JobSpec{Name: "handed", Schedule: "every 1h", Prompt: "p", Deliver: "testchat:c1"})
	// The other process: the same home, no bus.
	sys := actors.NewSystem(zerolog.Nop())
	defer sys.Shutdown()
	daemon := cron.New(g.store, cron.NewJobs(g.store, clock.Now), sys, cron.Config{Clock: clock, OutputDir: filepath.Join(dir, "output"), Agent: a, Leases: g.leases})
	run, err := daemon.RunNow(context.Background(), job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != schema.RunOK {
		t.Fatalf("run %+v", run)
	}
	end := clock.Now().Add(5 * time.Minute)
	for !settled(t, g.store, job.ID, 1) {
		if clock.Now().After(end) {
			t.Fatalf("not delivered: %+v", runs(t, g.store, job.ID)[0])
		}
		clock.Advance(time.Minute)
		time.Sleep(30 * time.Millisecond)
	}
	r := runs(t, g.store, job.ID)[0]
	if r.Result() != "ok" || !r.Outcomes["testchat:c1"].Delivered || len(plat.replies()) != 1 || plat.replies()[0].Text != "from the daemon" {
		t.Fatalf("run %s, outcomes %+v, sent %+v", r.Result(), r.Outcomes, plat.replies())
	}
}

// TestDeliveryToTheHomeChannel: a job delivering to a platform without
// naming a chat goes to the chat that sent /sethome there last; before
// any did, its delivery fails saying what to do, and the run is not "ok".
func TestDeliveryToTheHomeChannel(t *testing.T) {
	clock := crontest.NewClock(t0)
	plat := &chatPlatform{ready: make(chan struct{})}
	g := startCronGateway(t, t.TempDir(), clock, plat, &stubAgent{reply: func(context.Context, *cron.Job, string) (string, error) { return "the report", nil }})
	deliver := func(name string) *cron.Run {
		t.Helper()
		job := mustCreate(t, g.jobs, schema.JobSpec{Name: name, Schedule: "every 1d", Prompt: "p", Deliver: "testchat"})
		if _, err := g.sched.RunNow(context.Background(), job.ID); err != nil {
			t.Fatal(err)
		}
		end := clock.Now().Add(5 * time.Minute)
		for !settled(t, g.store, job.ID, 1) {
			if clock.Now().After(end) {
				t.Fatalf("%s not settled: %+v", name, runs(t, g.store, job.ID)[0])
			}
			clock.Advance(time.Minute)
			time.Sleep(30 * time.Millisecond)
		}
		return runs(t, g.store, job.ID)[0]
	}
	if r := deliver("early"); r.Result() != "ok, delivery failed" || !strings.Contains(r.Outcomes["testchat"].Error, "testchat has no home channel: send /sethome") {
		t.Fatalf("before /sethome: %s %+v", r.Result(), r.Outcomes)
	}
	plat.mu.Lock()
	in := plat.in
	plat.mu.Unlock()
	if err := in(context.Background(), schema.Inbound{Platform: "testchat", Chat: "c9", User: "u1", MessageID: "h1", Text: "/sethome"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the answer to /sethome", func() bool {
		for _, o := range plat.replies() {
			if o.Chat == "c9" && strings.Contains(o.Text, "home channel") {
				return true
			}
		}
		return false
	})
	if r := deliver("later"); r.Result() != "ok" || !r.Outcomes["testchat"].Delivered {
		t.Fatalf("after /sethome: %s %+v", r.Result(), r.Outcomes)
	}
	got := 0
	for _, o := range plat.replies() {
		if o.Text == "the report" || strings.Contains(o.Text, "the report") {
			if o.Chat != "c9" {
				t.Fatalf("the report went to %q", o.Chat)
			}
			got++
		}
	}
	if got != 1 {
		t.Fatalf("the home channel got the report %d times", got)
	}
}
