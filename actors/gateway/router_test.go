package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/command"
	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/actors/toolrun"
	"github.com/hermes-go/hermes/adapters/bus"
	gw "github.com/hermes-go/hermes/adapters/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/adapters/tools/terminal"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// chatPlatform is the test's side of a platform: it publishes what the
// test says a user sent and collects what the gateway sends back, through
// the real bus and the shared adapter plumbing (gw.Served).
type chatPlatform struct {
	mu    sync.Mutex
	sent  []schema.Outbound
	inbox gw.Inbox
	ready chan struct{}
	fail  int // Send fails this many times first
	name  string
}

func (p *chatPlatform) Name() string {
	if p.name != "" {
		return p.name
	}
	return "testchat"
}
func (p *chatPlatform) Run(ctx context.Context, in gw.Inbox) error {
	p.inbox = in
	close(p.ready)
	<-ctx.Done()
	return nil
}
func (p *chatPlatform) Send(_ context.Context, out schema.Outbound) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if out.Kind == "typing" {
		return nil, nil
	}
	if p.fail > 0 {
		p.fail--
		return nil, &gw.RetryAfterError{After: 10 * time.Millisecond, Err: context.DeadlineExceeded}
	}
	p.sent = append(p.sent, out)
	return []string{"m" + uuid.NewString()[:6]}, nil
}

// editingPlatform is a chatPlatform that can edit the messages it sent
// (gw.Editor): each edit is collected as a message sent.
type editingPlatform struct{ *chatPlatform }

func (p editingPlatform) Edit(ctx context.Context, out schema.Outbound, ids []string) ([]string, error) {
	got, err := p.Send(ctx, out)
	if len(ids) > 0 {
		return ids, err
	}
	return got, err
}

func (p *chatPlatform) replies() []schema.Outbound {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []schema.Outbound
	for _, o := range p.sent {
		if o.Kind == "reply" || o.Kind == "notice" || o.Kind == "approval" {
			out = append(out, o)
		}
	}
	return out
}

func (p *chatPlatform) send(t *testing.T, in schema.Inbound) {
	t.Helper()
	if err := p.inbox(context.Background(), in); err != nil {
		t.Fatal(err)
	}
}

// waitReplies waits until n replies arrived.
func (p *chatPlatform) waitReplies(t *testing.T, n int) []schema.Outbound {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if r := p.replies(); len(r) >= n {
			return r
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("waited for %d replies, got %d: %+v", n, len(p.replies()), p.replies())
	return nil
}

type gwRig struct {
	store  *embedded.Store
	srv    *llmtest.Server
	plat   *chatPlatform
	router *gateway.Router
	stop   func()
}

type slowTool struct{ started chan struct{} }

func (slowTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "slow", Description: "waits", Parameters: map[string]any{"type": "object"}}
}
func (slowTool) Flags() tool.Flags { return tool.Flags{} }
func (s slowTool) Run(ctx context.Context, _ json.RawMessage) (string, error) {
	select {
	case s.started <- struct{}{}:
	default:
	}
	select {
	case <-time.After(10 * time.Second):
		return "done", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func newGwRig(t *testing.T, dir string, cfg gateway.Config, script ...llmtest.Reply) *gwRig {
	t.Helper()
	return newGwRigOn(t, dir, "", false, cfg, script...)
}

// newGwRigOn is newGwRig with the test's platform named platform ("":
// testchat), and able to edit its messages (so shown previews and
// progress) when edits is set.
func newGwRigOn(t *testing.T, dir, platform string, edits bool, cfg gateway.Config, script ...llmtest.Reply) *gwRig {
	t.Helper()
	return newGwRigWrapped(t, dir, platform, edits, cfg, nil, script...)
}

// newGwRigWrapped is newGwRigOn with the gateway's store seen through
// wrap (faults), when set.
func newGwRigWrapped(t *testing.T, dir, platform string, edits bool, cfg gateway.Config, wrap func(events.Store) events.Store, script ...llmtest.Reply) *gwRig {
	t.Helper()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(script...)
	log := zerolog.Nop()
	sys := actors.NewSystem(log)
	b, err := bus.Open("", log)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NewSession == nil {
		cfg.NewSession = func(ctx context.Context, platform string) (string, error) {
			id := uuid.NewString()
			return id, session.Create(ctx, store, id, session.Start{Source: platform, Model: "gpt-4o-mini", System: "You are Hermes."})
		}
	}
	var gstore events.Store = store
	if wrap != nil {
		gstore = wrap(store)
	}
	router := gateway.New(gstore, b.Transport, sys, cfg, log)
	approver := &terminal.Approver{Timeout: 5 * time.Second}
	term := gatewaytest.ApprovalTool(approver)
	deps := session.Deps{Store: store, Log: log, Provider: openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"}),
		Tools: tool.NewTools(slowTool{started: make(chan struct{}, 1)}, term), Exec: toolrun.NewPool(sys, 8, 30*time.Second),
		Cfg: agent.Config{Model: "gpt-4o-mini"}, MaxTurns: 10, Asker: router.Asker()}
	mgr := session.NewManager(sys, deps)
	router.Sessions = mgr
	plat := &chatPlatform{ready: make(chan struct{}), name: platform}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = router.Run(ctx) }()
	<-router.Ready()
	var served *gw.Served
	if edits {
		served = gw.NewServed(editingPlatform{plat}, b, log)
	} else {
		served = gw.NewServed(plat, b, log)
	}
	go func() { defer wg.Done(); _ = served.Serve(ctx) }()
	<-plat.ready
	r := &gwRig{store: store, srv: srv, plat: plat, router: router}
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			mgr.Shutdown()
			sys.Shutdown()
			b.Close()
			srv.Close()
			store.Close()
		})
	}
	t.Cleanup(r.stop)
	return r
}

func dm(user, id, text string) schema.Inbound {
	return schema.Inbound{Chat: "c" + user, ChatType: "dm", User: user, MessageID: id, Text: text}
}

func TestGatewayAnswersAllowedUserOnce(t *testing.T) {
	r := newGwRig(t, t.TempDir(), gateway.Config{Auth: gateway.Auth{Platform: map[string][]string{"testchat": {"111"}}}},
		llmtest.Reply{Content: "Paris."})
	r.plat.send(t, dm("111", "1", "capital of France?"))
	got := r.plat.waitReplies(t, 1)
	if got[0].Text != "Paris." || got[0].InReplyTo != "1" || got[0].Chat != "c111" {
		t.Fatalf("reply %+v", got[0])
	}
	// The same platform message delivered again starts no second turn.
	r.plat.send(t, dm("111", "1", "capital of France?"))
	time.Sleep(300 * time.Millisecond)
	if n := len(r.plat.replies()); n != 1 {
		t.Fatalf("a redelivered message was answered again: %d replies", n)
	}
	if n := len(r.srv.Requests()); n != 1 {
		t.Fatalf("model called %d times", n)
	}
	// The session is a normal session with the platform as its source.
	rs, _ := r.store.ReadStream(context.Background(), events.SessionStream(got[0].SessionID), events.Forward, 0, 1)
	if len(rs) != 1 || !strings.Contains(string(rs[0].Payload), `"source":"testchat"`) {
		t.Fatalf("session start %+v", rs)
	}
	// The reply is recorded as delivered.
	waitFor(t, func() bool { return countTypes(t, r.store, "GatewayMessageDelivered") == 1 })
}

func TestGatewayUnknownUserGetsPairingCodeAndNoAgent(t *testing.T) {
	r := newGwRig(t, t.TempDir(), gateway.Config{Auth: gateway.Auth{Pairing: true}}, llmtest.Reply{Content: "hello, paired user"})
	r.plat.send(t, dm("999", "1", "let me in"))
	got := r.plat.waitReplies(t, 1)
	if !strings.Contains(got[0].Text, "hermes pairing approve") {
		t.Fatalf("notice %q", got[0].Text)
	}
	code := strings.Fields(strings.SplitAfter(got[0].Text, "approve ")[1])[0]
	if len(code) != gateway.CodeLength {
		t.Fatalf("code %q", code)
	}
	if n := len(r.srv.Requests()); n != 0 {
		t.Fatalf("the agent ran for an unknown user (%d calls)", n)
	}
	// A second message within the interval gives no new code.
	r.plat.send(t, dm("999", "2", "again"))
	got = r.plat.waitReplies(t, 2)
	if strings.Contains(got[1].Text, "approve ") {
		t.Fatalf("a second code was given: %q", got[1].Text)
	}
	// The code is stored only as a hash.
	raw := allPayloads(t, r.store)
	if strings.Contains(raw, code) {
		t.Fatal("the pairing code is stored in clear")
	}
	// The owner approves (as `hermes pairing approve` does, from the store).
	p, err := gateway.LoadPairings(context.Background(), r.store)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Approve(context.Background(), r.store, "WRONGCOD", time.Now()); err == nil {
		t.Fatal("a wrong code was accepted")
	}
	who, err := p.Approve(context.Background(), r.store, strings.ToLower(code), time.Now())
	if err != nil || who.User != "999" {
		t.Fatalf("approve: %v %+v", err, who)
	}
	r.plat.send(t, dm("999", "3", "hi"))
	got = r.plat.waitReplies(t, 3)
	if got[2].Text != "hello, paired user" {
		t.Fatalf("after pairing: %q", got[2].Text)
	}
	if n := countTypes(t, r.store, "GatewayInboundRefused"); n != 2 {
		t.Fatalf("%d refusals recorded, want 2", n)
	}
}

func TestGatewayApprovalOnlyBySessionUser(t *testing.T) {
	// A shared group session: two users in one chat.
	r := newGwRig(t, t.TempDir(), gateway.Config{SharedGroupSessions: true, Auth: gateway.Auth{Global: []string{"111", "222"}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		llmtest.Reply{Content: "deleted"})
	group := func(user, id, text string) schema.Inbound {
		return schema.Inbound{Chat: "g1", ChatType: "group", Mentioned: true, User: user, MessageID: id, Text: text}
	}
	r.plat.send(t, group("111", "1", "clean the build dir"))
	got := r.plat.waitReplies(t, 1)
	if got[0].Kind != "approval" || !strings.Contains(got[0].Text, "rm -rf build") {
		t.Fatalf("approval prompt %+v", got[0])
	}
	// Another member of the group tries to approve: refused.
	r.plat.send(t, group("222", "2", "/approve"))
	got = r.plat.waitReplies(t, 2)
	if !strings.Contains(got[1].Text, "Only the person") {
		t.Fatalf("other user's /approve: %q", got[1].Text)
	}
	// A button press by the other user is refused too.
	r.plat.send(t, schema.Inbound{Kind: "callback", Key: got[0].Key, Chat: "g1", User: "222", Data: "approval:once"})
	time.Sleep(200 * time.Millisecond)
	if countTypes(t, r.store, "ApprovalDecided") != 0 {
		t.Fatal("someone else's answer decided the approval")
	}
	r.plat.send(t, group("111", "3", "/approve"))
	got = r.plat.waitReplies(t, 3)
	if got[2].Text != "deleted" {
		t.Fatalf("after approval: %+v", got[2])
	}
	if !strings.Contains(allPayloads(t, r.store), `"decision":"once","by":"user"`) {
		t.Fatal("approval decision not recorded as the user's")
	}
}

func TestGatewayCommandsAndQueue(t *testing.T) {
	r := newGwRig(t, t.TempDir(), gateway.Config{Auth: gateway.Auth{AllowAll: true}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "s1", Name: "slow", Args: `{}`}}},
		llmtest.Reply{Content: "second answer"},
		llmtest.Reply{Content: "after new"})
	r.plat.send(t, dm("5", "1", "do something slow"))
	waitFor(t, func() bool { return countTypes(t, r.store, "ToolCallStarted") == 1 })
	r.plat.send(t, dm("5", "2", "and this after"))
	r.plat.send(t, dm("5", "3", "/stop"))
	got := r.plat.waitReplies(t, 1)
	if got[0].Text != "Stopped." {
		t.Fatalf("stop: %+v", got[0])
	}
	// /stop drops the queued message too.
	time.Sleep(200 * time.Millisecond)
	if len(r.plat.replies()) != 1 {
		t.Fatalf("queued message ran after /stop: %+v", r.plat.replies())
	}
	first := got[0].SessionID
	r.plat.send(t, dm("5", "4", "/new"))
	got = r.plat.waitReplies(t, 2)
	if !strings.Contains(got[1].Text, "New conversation") {
		t.Fatalf("/new: %q", got[1].Text)
	}
	r.plat.send(t, dm("5", "5", "hello again"))
	got = r.plat.waitReplies(t, 3)
	if got[2].SessionID == first || got[2].SessionID == "" {
		t.Fatalf("/new kept session %s", got[2].SessionID)
	}
	r.plat.send(t, dm("5", "6", "/usage"))
	got = r.plat.waitReplies(t, 4)
	if !strings.Contains(got[3].Text, "model calls") {
		t.Fatalf("/usage: %q", got[3].Text)
	}
}

func TestGatewayRetriesDelivery(t *testing.T) {
	r := newGwRig(t, t.TempDir(), gateway.Config{Auth: gateway.Auth{AllowAll: true}}, llmtest.Reply{Content: "eventually"})
	r.plat.fail = 3
	r.plat.send(t, dm("5", "1", "hi"))
	got := r.plat.waitReplies(t, 1)
	if got[0].Text != "eventually" {
		t.Fatal(got)
	}
	waitFor(t, func() bool { return countTypes(t, r.store, "GatewayMessageDelivered") == 1 })
}

func TestGatewayRestartSendsUndeliveredAndFinishesTurns(t *testing.T) {
	dir := t.TempDir()
	r := newGwRig(t, dir, gateway.Config{Auth: gateway.Auth{AllowAll: true}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "s1", Name: "slow", Args: `{}`}}})
	r.plat.send(t, dm("5", "1", "long task"))
	waitFor(t, func() bool { return countTypes(t, r.store, "ToolCallStarted") == 1 })
	// The process goes away mid-turn (the session actor records the
	// interruption on its way down, as its recovery would after a kill).
	r.stop()

	r2 := newGwRig(t, dir, gateway.Config{Auth: gateway.Auth{AllowAll: true}}, llmtest.Reply{Content: "finished after restart"})
	got := r2.plat.waitReplies(t, 1)
	if got[0].Text != "finished after restart" || got[0].InReplyTo != "1" {
		t.Fatalf("after restart: %+v", got)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(r2.plat.replies()); n != 1 {
		t.Fatalf("%d replies after restart", n)
	}
	// The user's message entered the session once.
	if n := countTypes(t, r2.store, "UserMessageAdded"); n != 1 {
		t.Fatalf("%d user messages recorded", n)
	}
}

func waitFor(t *testing.T, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if f() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met in time")
}

func countTypes(t *testing.T, store events.Store, typ string) int {
	rs, err := store.ReadAll(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rs {
		if r.Type == typ {
			n++
		}
	}
	return n
}

func allPayloads(t *testing.T, store events.Store) string {
	rs, err := store.ReadAll(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, r := range rs {
		b.Write(r.Payload)
		b.WriteByte('\n')
	}
	return b.String()
}

// TestGatewayCommandTable sends every command the table offers the gateway,
// under each of its names: each has a handler (none answers that it has
// not), /help is the table's help, and unknown commands say so clearly.
func TestGatewayCommandTable(t *testing.T) {
	r := newGwRig(t, t.TempDir(), gateway.Config{Auth: gateway.Auth{AllowAll: true}})
	n := 0
	send := func(text string) string {
		t.Helper()
		n++
		r.plat.send(t, dm("7", fmt.Sprint(n), text))
		return r.plat.waitReplies(t, n)[n-1].Text
	}
	for _, c := range command.Gateway.Commands() {
		for _, name := range append([]string{c.Name}, c.Aliases...) {
			if got := send(name); strings.Contains(got, "no handler") || strings.Contains(got, "nknown command") {
				t.Errorf("%s: %q", name, got)
			}
		}
	}
	help := "Commands:\n" + command.Gateway.Help()
	for _, text := range []string{"/help", "/start", "/HELP@hermes_bot"} {
		if got := send(text); got != help {
			t.Errorf("%s: %q, want the table's help", text, got)
		}
	}
	for text, want := range map[string]string{
		"/reset":     "New conversation started.",
		"/bogus":     "Unknown command /bogus: /help lists the commands.",
		"/stpo":      "Unknown command /stpo: did you mean /stop? /help lists the commands.",
		"/undo 2":    "Nothing to take back yet.",
		"/history":   "/history is not available here, only in the chat screen: /help lists the commands here.",
		"/yolo":      "/yolo is not available here, only in the chat screen: /help lists the commands here.",
		"/quit":      "/quit is not available here, only in the chat screen and plain chat: /help lists the commands here.",
		"/approve":   "There is no question waiting for an answer.",
		"/deny":      "There is no question waiting for an answer.",
		"/Model m-2": "This chat now uses m-2.",
	} {
		if got := send(text); got != want {
			t.Errorf("%s: %q, want %q", text, got, want)
		}
	}
	if n := len(r.srv.Requests()); n != 0 {
		t.Errorf("commands called the model %d times", n)
	}
}

// TestGatewayModelSurvivesRestart: the chat's model, set by /model as any
// phone or group chat writes it, is read back from the chat's stream after
// a restart (the replay parsed "/model " literally and lost this one).
func TestGatewayModelSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	r := newGwRig(t, dir, gateway.Config{Auth: gateway.Auth{AllowAll: true}})
	r.plat.send(t, dm("5", "1", "/Model@hermes_bot other-model"))
	if got := r.plat.waitReplies(t, 1)[0].Text; got != "This chat now uses other-model." {
		t.Fatalf("/model: %q", got)
	}
	// Delivered, so the restarted router does not send it again.
	waitFor(t, func() bool { return countTypes(t, r.store, "GatewayMessageDelivered") == 1 })
	r.stop()
	r2 := newGwRig(t, dir, gateway.Config{Auth: gateway.Auth{AllowAll: true}})
	r2.plat.send(t, dm("5", "2", "/status"))
	got := r2.plat.waitReplies(t, 1)
	if len(got) != 1 || got[0].InReplyTo != "2" || !strings.Contains(got[0].Text, "Model: other-model\n") {
		t.Fatalf("/status after the restart: %+v", got)
	}
}

// TestGatewayRevokeBitesAtOnce: a paired user revoked by another process
// (`hermes pairing revoke`: its own store handle, its own fold of the
// pairing stream) is refused on their very next message — no turn, the
// refusal recorded — once the router's follow of the pairing stream has
// reached the revocation (it was answered for ever before: pairings were
// read again only for users not paired).
func TestGatewayRevokeBitesAtOnce(t *testing.T) {
	dir := t.TempDir()
	r := newGwRig(t, dir, gateway.Config{Auth: gateway.Auth{Pairing: true}},
		llmtest.Reply{Content: "hello, paired user"}, llmtest.Reply{Content: "the model ran for a revoked user"})
	ctx := context.Background()
	r.plat.send(t, dm("999", "1", "let me in"))
	code := strings.Fields(strings.SplitAfter(r.plat.waitReplies(t, 1)[0].Text, "approve ")[1])[0]

	// The CLI is another process: another handle on the same store.
	cli, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	p, err := gateway.LoadPairings(ctx, cli)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Approve(ctx, cli, code, time.Now()); err != nil {
		t.Fatal(err)
	}
	r.plat.send(t, dm("999", "2", "hi"))
	if got := r.plat.waitReplies(t, 2)[1].Text; got != "hello, paired user" {
		t.Fatalf("paired user: %q", got)
	}
	turns := countTypes(t, r.store, "UserMessageAdded")
	refused := countTypes(t, r.store, "GatewayInboundRefused")

	p, err = gateway.LoadPairings(ctx, cli)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Revoke(ctx, cli, "testchat/999"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { rev, ok := r.router.PairingRevision(); return ok && rev >= p.Revision })

	r.plat.send(t, dm("999", "3", "still there?"))
	got := r.plat.waitReplies(t, 3)[2]
	if got.Kind != schema.OutboundNotice || !strings.Contains(got.Text, "I don't know you yet") {
		t.Fatalf("the revoked user's next message was answered: %+v", got)
	}
	if n := countTypes(t, r.store, "GatewayInboundRefused"); n != refused+1 {
		t.Fatalf("%d refusals recorded, want %d", n, refused+1)
	}
	if n := countTypes(t, r.store, "UserMessageAdded"); n != turns {
		t.Fatalf("a turn started for the revoked user (%d user messages, want %d)", n, turns)
	}
	if n := len(r.srv.Requests()); n != 1 {
		t.Fatalf("the model was called %d times, want 1", n)
	}
	if !strings.Contains(allPayloads(t, r.store), `"user":"999","message_id":"3","reason":"not allowed: pairing code sent"`) {
		t.Fatalf("the refusal of message 3 is not recorded: %s", allPayloads(t, r.store))
	}
}

// TestPairingStrangersCannotBlockPairing: three (or thirty) strangers
// asking for codes do not stop the next person from getting one, and one
// stranger asking again holds one code, not three.
func TestPairingStrangersCannotBlockPairing(t *testing.T) {
	ctx := context.Background()
	store, err := embedded.Open(filepath.Join(t.TempDir(), "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	p, err := gateway.LoadPairings(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	codes := map[string]string{}
	for i := 0; i < 30; i++ {
		user := fmt.Sprintf("stranger%d", i)
		if codes[user], err = p.Request(ctx, store, "telegram", user, "", "c"+user, now); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	// One stranger asks again and again, past the interval each time.
	for i := 1; i <= 3; i++ {
		if codes["stranger29"], err = p.Request(ctx, store, "telegram", "stranger29", "", "c", now.Add(time.Duration(i)*(gateway.CodeInterval+time.Minute))); err != nil {
			t.Fatalf("stranger29 again: %v", err)
		}
	}
	later := now.Add(4 * (gateway.CodeInterval + time.Minute))
	code, err := p.Request(ctx, store, "telegram", "friend", "Friend", "cfriend", later)
	if err != nil {
		t.Fatalf("the friend got no code after the strangers: %v", err)
	}
	// Another process folds the same codes.
	q, err := gateway.LoadPairings(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	live := q.Live(later)
	if len(live) != gateway.MaxPending {
		t.Fatalf("%d codes pending, want %d: %+v", len(live), gateway.MaxPending, live)
	}
	per := map[string]int{}
	for _, c := range live {
		per[c.User]++
	}
	if per["stranger29"] != 1 || per["friend"] != 1 {
		t.Fatalf("pending per user %v: want one each for stranger29 and friend", per)
	}
	if _, err := q.Approve(ctx, store, codes["stranger0"], later); err == nil {
		t.Fatal("the oldest stranger's code, pushed out, still pairs")
	}
	who, err := q.Approve(ctx, store, code, later)
	if err != nil || who.User != "friend" {
		t.Fatalf("approve the friend: %v %+v", err, who)
	}
	// The per-user interval still holds (it counts from when the code was
	// recorded).
	if _, err := q.Request(ctx, store, "telegram", "stranger29", "", "c", time.Now()); !errors.Is(err, gateway.ErrPairingLimited) {
		t.Fatalf("a second code within the interval: %v", err)
	}
}

// TestGatewayRevokeBitesInEveryRouter: two gateways on one store (the
// processes of a cluster) each follow the pairing stream, so a revocation
// recorded by a third process is refused by both.
func TestGatewayRevokeBitesInEveryRouter(t *testing.T) {
	dir := t.TempDir()
	cfg := gateway.Config{Auth: gateway.Auth{Pairing: true}}
	a := newGwRig(t, dir, cfg, llmtest.Reply{Content: "from a"}, llmtest.Reply{Content: "a answered a revoked user"})
	b := newGwRig(t, dir, cfg, llmtest.Reply{Content: "from b"}, llmtest.Reply{Content: "b answered a revoked user"})
	ctx := context.Background()
	cli, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	a.plat.send(t, dm("999", "1", "let me in"))
	code := strings.Fields(strings.SplitAfter(a.plat.waitReplies(t, 1)[0].Text, "approve ")[1])[0]
	p, err := gateway.LoadPairings(ctx, cli)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Approve(ctx, cli, code, time.Now()); err != nil {
		t.Fatal(err)
	}
	// The same user, in a chat each gateway serves.
	inB := func(id, text string) schema.Inbound {
		in := dm("999", id, text)
		in.Chat = "b999"
		return in
	}
	a.plat.send(t, dm("999", "2", "hi a"))
	b.plat.send(t, inB("1", "hi b"))
	if got := a.plat.waitReplies(t, 2)[1].Text; got != "from a" {
		t.Fatalf("a: %q", got)
	}
	if got := b.plat.waitReplies(t, 1)[0].Text; got != "from b" {
		t.Fatalf("b: %q", got)
	}

	if _, err := p.Revoke(ctx, cli, "999"); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*gwRig{a, b} {
		waitFor(t, func() bool { rev, ok := r.router.PairingRevision(); return ok && rev >= p.Revision })
	}
	a.plat.send(t, dm("999", "3", "still there, a?"))
	b.plat.send(t, inB("2", "still there, b?"))
	for name, got := range map[string]schema.Outbound{"a": a.plat.waitReplies(t, 3)[2], "b": b.plat.waitReplies(t, 2)[1]} {
		if got.Kind != schema.OutboundNotice || !strings.Contains(got.Text, "I don't know you yet") {
			t.Errorf("%s answered the revoked user: %+v", name, got)
		}
	}
	if n := len(a.srv.Requests()) + len(b.srv.Requests()); n != 2 {
		t.Fatalf("%d model calls, want 2", n)
	}
}

// TestGatewayPersonality: /personality lists the configured ones, takes one
// on for the chat (sent with each message, never recorded), survives a
// restart, and /personality none drops it; /copy, a terminal's command,
// says where it is.
func TestGatewayPersonality(t *testing.T) {
	dir := t.TempDir()
	cfg := gateway.Config{Auth: gateway.Auth{AllowAll: true}, Version: "hermes v9 test",
		Personalities: map[string]string{"pirate": "Speak like a pirate.", "terse": "Answer in five words."}}
	r := newGwRig(t, dir, cfg, llmtest.Reply{Content: "Arr."}, llmtest.Reply{Content: "Arr again."}, llmtest.Reply{Content: "Plain."})
	n := 0
	send := func(text string) string {
		t.Helper()
		n++
		r.plat.send(t, dm("5", fmt.Sprint(n), text))
		return r.plat.waitReplies(t, n)[n-1].Text
	}
	for text, want := range map[string]string{
		"/personality":        "Personalities: none, pirate, terse. /personality NAME takes one on for this chat.",
		"/personality nope":   `There is no personality "nope". /personality lists them.`,
		"/version":            "hermes v9 test",
		"/copy":               "/copy is not available here, only in the chat screen and plain chat: /help lists the commands here.",
		"/personality Pirate": "Personality pirate from the next message.",
	} {
		if got := send(text); got != want {
			t.Errorf("%s: %q, want %q", text, got, want)
		}
	}
	if got := send("hello"); got != "Arr." {
		t.Fatalf("answer: %q", got)
	}
	if msgs := r.srv.Requests(); len(msgs) != 1 || !strings.Contains(string(msgs[0].Raw), "Speak like a pirate.") {
		t.Fatalf("the persona was not sent: %d requests", len(msgs))
	}
	if strings.Contains(allPayloads(t, r.store), "Speak like a pirate.") {
		t.Fatal("the persona was recorded")
	}
	waitFor(t, func() bool { return countTypes(t, r.store, "GatewayMessageDelivered") == n })
	r.stop()
	r2 := newGwRig(t, dir, cfg, llmtest.Reply{Content: "Arr again."}, llmtest.Reply{Content: "Plain."})
	m := 0
	send2 := func(text string) string {
		t.Helper()
		m++
		r2.plat.send(t, dm("5", fmt.Sprint(100+m), text))
		return r2.plat.waitReplies(t, m)[m-1].Text
	}
	send2("hello again")
	if msgs := r2.srv.Requests(); len(msgs) != 1 || !strings.Contains(string(msgs[0].Raw), "Speak like a pirate.") {
		t.Fatal("the persona did not survive the restart")
	}
	if got := send2("/personality none"); got != "No personality from the next message." {
		t.Fatalf("/personality none: %q", got)
	}
	send2("and now?")
	if msgs := r2.srv.Requests(); len(msgs) != 2 || strings.Contains(string(msgs[1].Raw), "Speak like a pirate.") {
		t.Fatal("the persona was not dropped")
	}
}

// TestGatewayRetryAndUndo: /retry answers the last message again in a fork
// of the session, /undo takes it back, and /usage counts the
// conversation's calls across the forks.
func TestGatewayRetryAndUndo(t *testing.T) {
	r := newGwRig(t, t.TempDir(), gateway.Config{Auth: gateway.Auth{AllowAll: true}},
		llmtest.Reply{Content: "First answer."}, llmtest.Reply{Content: "Second answer."})
	n := 0
	send := func(text string) string {
		t.Helper()
		n++
		r.plat.send(t, dm("5", fmt.Sprint(n), text))
		return r.plat.waitReplies(t, n)[n-1].Text
	}
	if got := send("/retry"); got != "No conversation yet." {
		t.Fatalf("/retry first: %q", got)
	}
	if got := send("hello"); got != "First answer." {
		t.Fatalf("answer: %q", got)
	}
	if got := send("/retry"); got != "Second answer." {
		t.Fatalf("/retry: %q", got)
	}
	reqs := r.srv.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Raw), "hello") || strings.Contains(string(reqs[1].Raw), "First answer.") {
		t.Fatalf("the retry did not send the message again without its first answer: %d requests", len(reqs))
	}
	if got := send("/usage"); !strings.HasPrefix(got, "This conversation: 2 model calls") {
		t.Fatalf("/usage after /retry: %q", got)
	}
	if got := send("/undo"); got != `Took back 1 turn(s), to before your message "hello". Send it again, or something else.` {
		t.Fatalf("/undo: %q", got)
	}
	if got := send("/usage"); !strings.HasPrefix(got, "This conversation: 2 model calls") {
		t.Fatalf("/usage after /undo: %q", got)
	}
}

// /usage says a call of a model with no price costs "unknown", not $0, and
// prices it from its token usage when the router is given a price for it
// (config.yaml's prices, added after the call was made).
func TestGatewayUsageUnknownPrice(t *testing.T) {
	for _, c := range []struct {
		name   string
		prices model.Prices
		want   string
	}{
		{"no price", nil, "unknown. (1 call has no price (local-llama): add it under prices: in config.yaml)"},
		{"price added", model.Prices{"local-llama": {Input: 1, Output: 2}}, "$3.0000."},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newGwRig(t, t.TempDir(), gateway.Config{Auth: gateway.Auth{AllowAll: true}, Prices: c.prices},
				llmtest.Reply{Content: "hello", Model: "local-llama", Prompt: 1_000_000, Completion: 1_000_000})
			r.plat.send(t, dm("5", "1", "hi"))
			r.plat.waitReplies(t, 1)
			r.plat.send(t, dm("5", "2", "/usage"))
			got := r.plat.waitReplies(t, 2)
			if !strings.HasSuffix(got[1].Text, c.want) {
				t.Fatalf("/usage: %q, want it to end with %q", got[1].Text, c.want)
			}
		})
	}
}

// TestChatQueueIsBounded: while a turn runs, a chat queues up to
// MaxQueued messages; one more is refused with a message saying so, and
// the queued ones still run.
func TestChatQueueIsBounded(t *testing.T) {
	replies := []llmtest.Reply{{ToolCalls: []llmtest.ToolCall{{ID: "s1", Name: "slow", Args: `{}`}}}, {Content: "first"}}
	for i := 0; i < gateway.MaxQueued; i++ {
		replies = append(replies, llmtest.Reply{Content: fmt.Sprint("queued ", i)})
	}
	r := newGwRig(t, t.TempDir(), gateway.Config{Auth: gateway.Auth{AllowAll: true}}, replies...)
	r.plat.send(t, dm("5", "m0", "do something slow"))
	waitFor(t, func() bool { return countTypes(t, r.store, "ToolCallStarted") == 1 })
	for i := 1; i <= gateway.MaxQueued+1; i++ {
		r.plat.send(t, dm("5", fmt.Sprint("m", i), fmt.Sprint("message ", i)))
	}
	got := r.plat.waitReplies(t, 1)
	if got[0].InReplyTo != fmt.Sprint("m", gateway.MaxQueued+1) || !strings.Contains(got[0].Text, "this one was not taken") {
		t.Fatalf("the message over the bound: %+v", got[0])
	}
	got = r.plat.waitReplies(t, gateway.MaxQueued+2)
	if n := countTypes(t, r.store, "UserMessageAdded"); n != gateway.MaxQueued+1 {
		t.Fatalf("%d user messages reached the session, want %d", n, gateway.MaxQueued+1)
	}
}

// TestGatewaySkillCommand: /<skill-name> runs a turn with the text the
// Skill port makes of it, recording the skills it loads with the user
// message; a skill not offered is answered with the reason and runs
// nothing; a name that is no skill is an unknown command; /memory and
// /insights answer through their ports.
func TestGatewaySkillCommand(t *testing.T) {
	var asked []string
	cfg := gateway.Config{Auth: gateway.Auth{AllowAll: true},
		Skill: func(_ context.Context, platform, id, name, arg string) (gateway.SkillTurn, error) {
			asked = append(asked, platform+" "+name+" "+arg)
			switch name {
			case "deploy-check":
				return gateway.SkillTurn{Text: "[skill deploy-check loaded] " + arg, Skills: []string{"deploy-check"}}, nil
			case "mac-only":
				return gateway.SkillTurn{}, errors.New("skill mac-only is not offered here: it is for macos")
			}
			return gateway.SkillTurn{}, gateway.ErrNotSkill
		},
		Memory: func(_ context.Context, platform, arg string) (string, error) {
			return "memory on " + platform + ": " + arg, nil
		},
	}
	r := newGwRig(t, t.TempDir(), cfg, llmtest.Reply{Content: "checked"})
	r.plat.send(t, dm("5", "1", "/deploy-check the api"))
	got := r.plat.waitReplies(t, 1)
	if got[0].Text != "checked" {
		t.Fatalf("reply %+v", got[0])
	}
	if u := lastUser(t, r.srv.Requests()[0]); u != "[skill deploy-check loaded] the api" {
		t.Fatalf("the model got %q", u)
	}
	if all := allPayloads(t, r.store); !strings.Contains(all, `"skills":["deploy-check"]`) {
		t.Fatalf("the user message does not record the skill:\n%s", all)
	}
	r.plat.send(t, dm("5", "2", "/mac-only"))
	got = r.plat.waitReplies(t, 2)
	if !strings.Contains(got[1].Text, "not offered here: it is for macos") {
		t.Fatalf("excluded: %q", got[1].Text)
	}
	r.plat.send(t, dm("5", "3", "/nothing"))
	got = r.plat.waitReplies(t, 3)
	if !strings.Contains(got[2].Text, "Unknown command /nothing") {
		t.Fatalf("unknown: %q", got[2].Text)
	}
	r.plat.send(t, dm("5", "4", "/memory pending"))
	got = r.plat.waitReplies(t, 4)
	if got[3].Text != "memory on testchat: pending" {
		t.Fatalf("/memory: %q", got[3].Text)
	}
	r.plat.send(t, dm("5", "5", "/insights"))
	got = r.plat.waitReplies(t, 5)
	if !strings.Contains(got[4].Text, "not available") {
		t.Fatalf("/insights without a port: %q", got[4].Text)
	}
	if n := len(r.srv.Requests()); n != 1 {
		t.Fatalf("model called %d times", n)
	}
	if len(asked) != 3 || asked[0] != "testchat deploy-check the api" {
		t.Fatalf("asked %q", asked)
	}
}

func lastUser(t *testing.T, r llmtest.Request) string {
	t.Helper()
	msgs := r.Body["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i].(map[string]any); m["role"] == "user" {
			s, _ := m["content"].(string)
			return s
		}
	}
	return ""
}

// TestGatewayTitle: /title says there is no conversation yet, then no
// title, sets one (recorded by the session as SessionTitled) and shows it.
func TestGatewayTitle(t *testing.T) {
	r := newGwRig(t, t.TempDir(), gateway.Config{Auth: gateway.Auth{AllowAll: true}}, llmtest.Reply{Content: "Hi."})
	n := 0
	send := func(text string) string {
		t.Helper()
		n++
		r.plat.send(t, dm("5", fmt.Sprint(n), text))
		return r.plat.waitReplies(t, n)[n-1].Text
	}
	for _, step := range []struct{ in, want string }{
		{"/title", "No conversation yet."},
		{"hello", "Hi."},
		{"/title", "This conversation has no title yet. /title TEXT gives it one."},
		{"/title Trip to Lisbon", "Title: Trip to Lisbon"},
		{"/title", "Title: Trip to Lisbon"},
	} {
		if got := send(step.in); got != step.want {
			t.Fatalf("%s: %q, want %q", step.in, got, step.want)
		}
	}
	if countTypes(t, r.store, "SessionTitled") < 1 {
		t.Fatal("no SessionTitled recorded")
	}
}

// TestGatewayChatsPassivate: a chat's actor stops once it has held no work
// for ChatIdle, so the live chats follow the chats at work; the next
// message starts it again from its stream, which knows the conversation
// (its session, the message ids already answered).
func TestGatewayChatsPassivate(t *testing.T) {
	cfg := gateway.Config{Auth: gateway.Auth{AllowAll: true}, ChatIdle: 100 * time.Millisecond}
	r := newGwRig(t, t.TempDir(), cfg, llmtest.Reply{Content: "one"}, llmtest.Reply{Content: "two"}, llmtest.Reply{Content: "three"},
		llmtest.Reply{Content: "again"})
	for i, who := range []string{"5", "6", "7"} {
		r.plat.send(t, dm(who, fmt.Sprint(i+1), "hello"))
	}
	first := ""
	for _, o := range r.plat.waitReplies(t, 3) {
		if o.Chat == dm("5", "1", "").Chat {
			first = o.Text // the three chats ask at once: any of the answers may be 5's
		}
	}
	if first == "" {
		t.Fatal("chat 5 was not answered")
	}
	waitFor(t, func() bool { return r.router.LiveChats() == 0 })
	// The same message id again (a platform's redelivery) is not answered
	// twice by the chat started again; a new message goes on in the same
	// session.
	r.plat.send(t, dm("5", "1", "hello"))
	r.plat.send(t, dm("5", "4", "and now?"))
	got := r.plat.waitReplies(t, 4)
	if got[3].Text != "again" {
		t.Fatalf("the fourth reply: %q", got[3].Text)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(r.plat.replies()); n != 4 {
		t.Fatalf("%d replies, want 4: the redelivered message was answered again", n)
	}
	if n := countTypes(t, r.store, "GatewaySessionBound"); n != 3 {
		t.Fatalf("%d sessions bound, want 3 (the woken chat kept its session)", n)
	}
	reqs := r.srv.Requests()
	if body := string(reqs[len(reqs)-1].Raw); !strings.Contains(body, "and now?") || !strings.Contains(body, `"`+first+`"`) {
		t.Fatalf("the woken chat's turn lost its history: %s", body)
	}
	waitFor(t, func() bool { return r.router.LiveChats() == 0 })
}
