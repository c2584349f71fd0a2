package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors"
	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/adapters/tools/delegate"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// idleRig is a manager whose sessions passivate after idle, leased by
// lock files in locks.
type idleRig struct {
	srv   *llmtest.Server
	store *embedded.Store
	mgr   *session.Manager
	locks string
}

func newIdleRig(t testing.TB, idle time.Duration, route func(llmtest.Request) *llmtest.Reply, tweak func(*session.Deps)) *idleRig {
	t.Helper()
	dir := t.TempDir()
	store, err := embedded.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New()
	srv.SetRoute(route)
	sys := actors.NewSystem(zerolog.Nop())
	locks := filepath.Join(dir, "locks")
	deps := session.Deps{Store: store, Log: zerolog.Nop(), Provider: openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"}),
		Tools: tool.NewTools(echoTool{}), Exec: tool.DirectExecutor{Timeout: 10 * time.Second}, Cfg: agent.Config{Model: "m"}, MaxTurns: 20,
		Leases: session.NewFileLeases(locks, session.Owner{Host: "here", PID: 1}), IdleAfter: idle}
	if tweak != nil {
		tweak(&deps)
	}
	mgr := session.NewManager(sys, deps)
	t.Cleanup(func() {
		mgr.Shutdown()
		sys.Shutdown()
		srv.Close()
		store.Close()
	})
	return &idleRig{srv: srv, store: store, mgr: mgr, locks: locks}
}

func (r *idleRig) create(t testing.TB, id string) {
	t.Helper()
	if err := session.Create(context.Background(), r.store, id, session.Start{Source: "api", Model: "m", System: "You are Hermes."}); err != nil {
		t.Fatal(err)
	}
}

// lockFiles lists the session lock files held now.
func (r *idleRig) lockFiles(t testing.TB) []string {
	t.Helper()
	es, err := os.ReadDir(r.locks)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// waitIdle waits (generously) until the manager runs no session actor.
func waitIdle(t testing.TB, mgr *session.Manager) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for mgr.Active() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d session actors still run", mgr.Active())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// openFDs counts this process's open files, sockets and the event
// store's database files left out (the HTTP connections to the scripted
// model server and the store's connections come and go with their pools,
// which follow concurrency, not with sessions).
func openFDs(t testing.TB) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd here")
	}
	n := 0
	for _, e := range es {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil || strings.HasPrefix(target, "socket:") {
			continue
		}
		// The store's connections (its file, WAL and shared memory
		// each) follow concurrency, which a loaded machine varies; what
		// must not grow with the sessions seen is the rest.
		if strings.HasSuffix(target, ".db") || strings.HasSuffix(target, ".db-wal") || strings.HasSuffix(target, ".db-shm") {
			continue
		}
		n++
	}
	return n
}

func answerWith(content string) func(llmtest.Request) *llmtest.Reply {
	return func(llmtest.Request) *llmtest.Reply { return &llmtest.Reply{Content: content} }
}

// TestIdleSessionPassivatesAndWakesWithItsHistory: an idle session's actor
// stops and gives its lock up (another owner can lease the session, the
// manager holds no actor, the files it held are closed); the next message
// starts it from its events, and the model sees the earlier exchange.
func TestIdleSessionPassivatesAndWakesWithItsHistory(t *testing.T) {
	var n atomic.Int32
	r := newIdleRig(t, 100*time.Millisecond, func(llmtest.Request) *llmtest.Reply {
		return &llmtest.Reply{Content: fmt.Sprintf("answer %d", n.Add(1))}
	}, nil)
	r.create(t, "s1")
	ctx := context.Background()
	fds := openFDs(t)
	if res := r.mgr.Run(ctx, "s1", "remember the number 42", nil); res.Err != nil || res.Answer != "answer 1" {
		t.Fatalf("%+v", res)
	}
	waitIdle(t, r.mgr)
	if held := r.lockFiles(t); len(held) != 0 {
		t.Fatalf("a passivated session still holds %v", held)
	}
	other := session.NewFileLeases(r.locks, session.Owner{Host: "there", PID: 2})
	l, err := other.Lease("s1")
	if err != nil {
		t.Fatalf("another process cannot lease a passivated session: %v", err)
	}
	if l.Previous() != nil {
		t.Fatalf("the lease was not released but left: %v", l.Previous())
	}
	// While another process holds it, waking it here is refused.
	var inUse *session.InUseError
	if res := r.mgr.Run(ctx, "s1", "refused", nil); !errors.As(res.Err, &inUse) {
		t.Fatalf("woke a session another process holds: %+v", res)
	}
	l.Release()
	if got := openFDs(t); got > fds+2 {
		t.Fatalf("open files %d before, %d after the session went idle", fds, got)
	}

	res := r.mgr.Run(ctx, "s1", "what was the number?", nil)
	if res.Err != nil || res.Answer != "answer 2" {
		t.Fatalf("after waking: %+v", res)
	}
	reqs := r.srv.Requests()
	msgs := reqs[len(reqs)-1].Body["messages"].([]any)
	var got []string
	for _, m := range msgs {
		mm := m.(map[string]any)
		c, _ := mm["content"].(string)
		got = append(got, mm["role"].(string)+": "+c)
	}
	want := []string{"system: You are Hermes.", "user: remember the number 42", "assistant: answer 1", "user: what was the number?"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("the woken session sent %q, want %q", got, want)
	}
	if types := strings.Join(typesOf(t, r.store, "s1"), " "); strings.Contains(types, "TurnInterrupted") {
		t.Fatalf("passivation recorded an interruption: %s", types)
	}
	waitIdle(t, r.mgr)
}

func typesOf(t testing.TB, store events.Store, id string) []string {
	t.Helper()
	rs, err := store.ReadStream(context.Background(), events.SessionStream(id), events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range rs {
		out = append(out, e.Type)
	}
	return out
}

// askTool asks the person a question and answers what they said.
type askTool struct{}

func (askTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "ask", Description: "ask", Parameters: map[string]any{"type": "object"}}
}
func (askTool) Flags() tool.Flags { return tool.Flags{} }
func (askTool) Run(ctx context.Context, _ json.RawMessage) (string, error) {
	env := tool.EnvFrom(ctx)
	return env.Asker.Ask(ctx, tool.Question{Kind: tool.QuestionClarify, Text: "which one?"})
}

// slowAsker is a person who takes their time to answer.
type slowAsker struct {
	asked  chan struct{}
	answer chan string
}

func (a slowAsker) Ask(ctx context.Context, q tool.Question) (string, error) {
	a.asked <- struct{}{}
	select {
	case s := <-a.answer:
		return s, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// TestBusySessionDoesNotPassivate: a session whose turn waits for the
// person's answer, far longer than its idle time, keeps its actor and its
// lock; once the turn ends, the idle clock starts and it passivates.
func TestBusySessionDoesNotPassivate(t *testing.T) {
	asker := slowAsker{asked: make(chan struct{}, 1), answer: make(chan string)}
	r := newIdleRig(t, 50*time.Millisecond, func(q llmtest.Request) *llmtest.Reply {
		role, content, _ := lastMsg(q)
		if role == "user" {
			return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "q", Name: "ask", Args: `{}`}}}
		}
		return &llmtest.Reply{Content: "you said " + content}
	}, func(d *session.Deps) {
		d.Tools, d.Asker = tool.NewTools(askTool{}), asker
	})
	r.create(t, "s1")
	done := make(chan session.TurnResult, 1)
	go func() { done <- r.mgr.Run(context.Background(), "s1", "pick", nil) }()
	<-asker.asked
	// Twenty idle times with a question pending.
	time.Sleep(time.Second)
	if r.mgr.Active() != 1 || len(r.lockFiles(t)) != 1 {
		t.Fatalf("a session with a pending question passivated: %d actors, locks %v", r.mgr.Active(), r.lockFiles(t))
	}
	// A message queued behind the running turn keeps it too.
	second := make(chan session.TurnResult, 1)
	go func() { second <- r.mgr.Run(context.Background(), "s1", "pick again", nil) }()
	<-asker.asked // the first turn was interrupted by the new message; the second asks
	time.Sleep(500 * time.Millisecond)
	if r.mgr.Active() != 1 {
		t.Fatal("a session with a queued turn passivated")
	}
	asker.answer <- "the blue one"
	if res := <-second; res.Err != nil || res.Answer != "you said the blue one" {
		t.Fatalf("%+v", res)
	}
	if res := <-done; !errors.Is(res.Err, agent.ErrInterrupted) {
		t.Fatalf("first turn: %+v", res)
	}
	waitIdle(t, r.mgr)
	if held := r.lockFiles(t); len(held) != 0 {
		t.Fatalf("locks after the turn ended and the session idled: %v", held)
	}
}

// TestMessagesRacingPassivationAreAnsweredOnce: sessions that passivate
// after a millisecond get messages at random moments around their stop:
// each is answered once, recorded once, and none is lost or hangs.
func TestMessagesRacingPassivationAreAnsweredOnce(t *testing.T) {
	r := newIdleRig(t, time.Millisecond, answerWith("ok"), nil)
	const sessions, turns = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, sessions*turns)
	for s := range sessions {
		id := fmt.Sprintf("race-%d", s)
		r.create(t, id)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range turns {
				time.Sleep(time.Duration(i%4) * 500 * time.Microsecond)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				res := r.mgr.Run(ctx, id, fmt.Sprintf("message %d", i), nil)
				cancel()
				if res.Err != nil || res.Answer != "ok" {
					errs <- fmt.Errorf("%s message %d: %+v", id, i, res)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for s := range sessions {
		id := fmt.Sprintf("race-%d", s)
		types := strings.Join(typesOf(t, r.store, id), " ")
		if u, c := strings.Count(types, "UserMessageAdded"), strings.Count(types, "TurnCompleted"); u != turns || c != turns {
			t.Fatalf("%s recorded %d user messages and %d completed turns, want %d: %s", id, u, c, turns, types)
		}
		if strings.Contains(types, "TurnInterrupted") {
			t.Fatalf("%s: %s", id, types)
		}
	}
	waitIdle(t, r.mgr)
	if held := r.lockFiles(t); len(held) != 0 {
		t.Fatalf("locks left: %v", held)
	}
}

// TestRestartRacingATurn: a turn sent while the session is restarted is
// run once by the next actor (or reported interrupted if it had started),
// never lost.
func TestRestartRacingATurn(t *testing.T) {
	r := newIdleRig(t, -1, answerWith("ok"), nil)
	r.create(t, "s1")
	ctx := context.Background()
	for i := range 30 {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.mgr.Restart("s1")
		}()
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		res := r.mgr.Run(c, "s1", fmt.Sprintf("message %d", i), nil)
		cancel()
		wg.Wait()
		if res.Err != nil && !errors.Is(res.Err, agent.ErrInterrupted) {
			t.Fatalf("message %d: %+v", i, res)
		}
	}
	types := strings.Join(typesOf(t, r.store, "s1"), " ")
	if u := strings.Count(types, "UserMessageAdded"); u > 30 {
		t.Fatalf("%d user messages for 30 turns", u)
	}
}

// TestSubagentsPassivate: a subagent's actor stops when its task ends,
// releasing its lock; its parent, once idle, passivates too, and wakes
// with the delegation in its history.
func TestSubagentsPassivate(t *testing.T) {
	route := func(q llmtest.Request) *llmtest.Reply {
		role, content, _ := lastMsg(q)
		switch goal := firstUser(q); {
		case goal == "delegate" && content == "more":
			return &llmtest.Reply{Content: "again: " + content}
		case goal == "delegate" && role == "user":
			return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "delegate_task", Args: `{"goal":"child: look"}`}}}
		case goal == "delegate" && role == "tool":
			return &llmtest.Reply{Content: "parent done"}
		default:
			return &llmtest.Reply{Content: "child done"}
		}
	}
	r := newIdleRig(t, 100*time.Millisecond, route, func(d *session.Deps) {
		d.Tools = tool.NewTools(delegate.Tool{}, echoTool{})
	})
	r.create(t, "parent")
	fds := openFDs(t)
	if res := r.mgr.Run(context.Background(), "parent", "delegate", nil); res.Err != nil || res.Answer != "parent done" {
		t.Fatalf("%+v", res)
	}
	waitIdle(t, r.mgr)
	if held := r.lockFiles(t); len(held) != 0 {
		t.Fatalf("locks after the tree went idle: %v", held)
	}
	if got := openFDs(t); got > fds+2 {
		t.Fatalf("open files %d before, %d after", fds, got)
	}
	if res := r.mgr.Run(context.Background(), "parent", "more", nil); res.Err != nil || res.Answer != "again: more" {
		t.Fatalf("%+v", res)
	}
	reqs := r.srv.Requests()
	if body, _ := json.Marshal(reqs[len(reqs)-1].Body["messages"]); !strings.Contains(string(body), "child done") {
		t.Fatalf("the woken parent lost the subagent's report: %s", body)
	}
}

// TestOpenFilesFollowActiveSessions: many sessions touched once hold a
// lock file each while active; once idle, the process is back to the
// files it had before. Two waves of new sessions: the first fills the
// pools that follow concurrency (the store's connections), the second
// shows that nothing grows with the sessions seen.
func TestOpenFilesFollowActiveSessions(t *testing.T) {
	r := newIdleRig(t, 300*time.Millisecond, answerWith("ok"), nil)
	const n = 40
	wave := func(from int) {
		t.Helper()
		var wg sync.WaitGroup
		for i := from; i < from+n; i++ {
			r.create(t, fmt.Sprintf("s%d", i))
			wg.Add(1)
			go func() {
				defer wg.Done()
				if res := r.mgr.Run(context.Background(), fmt.Sprintf("s%d", i), "hello", nil); res.Err != nil {
					t.Error(res.Err)
				}
			}()
		}
		wg.Wait()
		waitIdle(t, r.mgr)
	}
	wave(0)
	before := openFDs(t)
	wave(n)
	if after := openFDs(t); after > before+2 {
		t.Fatalf("open files: %d after %d sessions, %d once %d more are idle", before, n, after, n)
	}
	if held := r.lockFiles(t); len(held) != 0 {
		t.Fatalf("locks left: %v", held)
	}
}

// TestNeverPassivate: a negative IdleAfter keeps sessions.
func TestNeverPassivate(t *testing.T) {
	r := newIdleRig(t, -1, answerWith("ok"), nil)
	r.create(t, "s1")
	if res := r.mgr.Run(context.Background(), "s1", "hi", nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	time.Sleep(200 * time.Millisecond)
	if r.mgr.Active() != 1 || len(r.lockFiles(t)) != 1 {
		t.Fatalf("IdleAfter < 0 passivated: %d actors", r.mgr.Active())
	}
}

// TestTheSessionCompressionMovedToRunsOnItsActor: after a compression, the
// session the conversation goes on in is leased by the actor that made it;
// using it reaches that actor (instead of being refused as in use), and
// once that actor passivated, a new one runs it.
func TestTheSessionCompressionMovedToRunsOnItsActor(t *testing.T) {
	var n atomic.Int32
	r := newIdleRig(t, 200*time.Millisecond, func(llmtest.Request) *llmtest.Reply {
		return &llmtest.Reply{Content: fmt.Sprintf("answer %d", n.Add(1))}
	}, nil)
	r.create(t, "s")
	ctx := context.Background()
	for _, q := range []string{"one", "two", "three"} {
		if res := r.mgr.Run(ctx, "s", q, nil); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	next, err := r.mgr.CompressNow(ctx, "s", session.CompressNow{Force: true})
	if err != nil || next == "s" {
		t.Fatalf("compress: %q %v", next, err)
	}
	res := r.mgr.Run(ctx, next, "four", nil)
	if res.Err != nil || res.SessionID != next {
		t.Fatalf("a turn in the compressed child: %+v", res)
	}
	if r.mgr.Active() != 1 {
		t.Fatalf("%d actors run the parent and its child", r.mgr.Active())
	}
	waitIdle(t, r.mgr)
	if held := r.lockFiles(t); len(held) != 0 {
		t.Fatalf("locks left: %v", held)
	}
	if res := r.mgr.Run(ctx, next, "five", nil); res.Err != nil || res.SessionID != next {
		t.Fatalf("after passivating: %+v", res)
	}
	reqs := r.srv.Requests()
	body, _ := json.Marshal(reqs[len(reqs)-1].Body["messages"])
	for _, want := range []string{"three", "four", "five"} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("the woken child lacks %q: %s", want, body)
		}
	}
}

// TestACompressingSessionDoesNotPassivate: a compression that takes far
// longer than the idle time keeps the session's actor.
func TestACompressingSessionDoesNotPassivate(t *testing.T) {
	var slow atomic.Bool
	r := newIdleRig(t, 50*time.Millisecond, func(llmtest.Request) *llmtest.Reply {
		if slow.Load() {
			return &llmtest.Reply{Content: "the summary", Delay: time.Second}
		}
		return &llmtest.Reply{Content: "fine"}
	}, nil)
	r.create(t, "s")
	ctx := context.Background()
	for _, q := range []string{"one", "two", "three"} {
		if res := r.mgr.Run(ctx, "s", q, nil); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	slow.Store(true)
	done := make(chan error, 1)
	go func() {
		_, err := r.mgr.CompressNow(ctx, "s", session.CompressNow{Force: true})
		done <- err
	}()
	time.Sleep(500 * time.Millisecond) // ten idle times, the summariser still answering
	if r.mgr.Active() != 1 || len(r.lockFiles(t)) == 0 {
		t.Fatalf("a compressing session passivated: %d actors, locks %v", r.mgr.Active(), r.lockFiles(t))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitIdle(t, r.mgr)
}

// TestASessionWaitingForItsTitleDoesNotPassivate: after the first answer,
// with no caller left, the session waits for its generated title (which
// it records itself) before it passivates.
func TestASessionWaitingForItsTitleDoesNotPassivate(t *testing.T) {
	release := make(chan struct{})
	r := newIdleRig(t, 50*time.Millisecond, answerWith("hello"), func(d *session.Deps) {
		d.Title = func(ctx context.Context, _, _, _ string) (string, schema.AuxiliaryCallCompleted, error) {
			<-release
			return "Greetings", schema.AuxiliaryCallCompleted{Purpose: "title", Model: "m"}, nil
		}
	})
	r.create(t, "s")
	if res := r.mgr.Run(context.Background(), "s", "hi", nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	time.Sleep(500 * time.Millisecond)
	if r.mgr.Active() != 1 {
		t.Fatal("the session passivated while its title was being generated")
	}
	close(release)
	waitIdle(t, r.mgr)
	if types := strings.Join(typesOf(t, r.store, "s"), " "); !strings.HasSuffix(types, "SessionTitled") {
		t.Fatalf("the title was lost: %s", types)
	}
}

// TestConcurrentWakesStartOneActor: callers of a passivated session at
// once wake one actor (the others wait for its start), and a session that
// is slow to start holds up only its own callers.
func TestConcurrentWakesStartOneActor(t *testing.T) {
	r := newIdleRig(t, 100*time.Millisecond, answerWith("ok"), nil)
	r.create(t, "s")
	r.create(t, "other")
	ctx := context.Background()
	for round := range 3 {
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Each message interrupts the turn running (as a
				// person's next message does) and runs after it.
				if res := r.mgr.Run(ctx, "s", fmt.Sprintf("round %d caller %d", round, i), nil); res.Err != nil && !errors.Is(res.Err, agent.ErrInterrupted) {
					t.Error(res.Err)
				}
			}()
		}
		wg.Wait()
		waitIdle(t, r.mgr)
	}
	// A session another process holds is refused to every caller at
	// once, and does not hold up another session.
	other := session.NewFileLeases(r.locks, session.Owner{Host: "there", PID: 2})
	l, err := other.Lease("s")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var inUse *session.InUseError
			if res := r.mgr.Run(ctx, "s", "refused", nil); !errors.As(res.Err, &inUse) {
				t.Errorf("%+v", res)
			}
		}()
	}
	if res := r.mgr.Run(ctx, "other", "hi", nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	wg.Wait()
	if u := strings.Count(strings.Join(typesOf(t, r.store, "s"), " "), "UserMessageAdded"); u != 24 {
		t.Fatalf("%d user messages, want 24", u)
	}
}
