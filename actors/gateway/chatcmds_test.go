package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hermes-go/hermes/actors/command"
	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/session"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/schema"
)

// talk sends messages to the rig's platform as users of direct chats and
// returns what each is answered (one reply a message unless told).
type talk struct {
	t *testing.T
	r *gwRig
	n int
}

// say sends text as user and returns the reply it gets.
func (k *talk) say(user, text string) string {
	k.t.Helper()
	return k.sayN(user, text, 1)[0]
}

// sayN sends text as user and returns the n replies that follow it.
func (k *talk) sayN(user, text string, n int) []string {
	k.t.Helper()
	k.r.plat.send(k.t, dm(user, uuid.NewString(), text))
	k.n += n
	got := k.r.plat.waitReplies(k.t, k.n)
	var out []string
	for _, o := range got[k.n-n : k.n] {
		out = append(out, o.Text)
	}
	return out
}

// sessionOf is the session /status names for user's chat.
func (k *talk) sessionOf(user string) string {
	k.t.Helper()
	st := k.say(user, "/status")
	line, _, _ := strings.Cut(st, "\n")
	id, ok := strings.CutPrefix(line, "Session: ")
	if !ok {
		k.t.Fatalf("/status: %q", st)
	}
	return id
}

func allowAll() gateway.Config { return gateway.Config{Auth: gateway.Auth{AllowAll: true}} }

// TestGatewaySessionsAndResume: /sessions lists the chat's conversations,
// numbered, the latest first; /resume goes on in one by its number, its
// id or a unique prefix, and the chat stays bound to it after a restart.
// Another chat's session is refused by id and by prefix, as an unknown one
// is, and the refusal binds nothing.
func TestGatewaySessionsAndResume(t *testing.T) {
	dir := t.TempDir()
	r := newGwRig(t, dir, allowAll(), llmtest.Reply{Content: "About cats."}, llmtest.Reply{Content: "About dogs."},
		llmtest.Reply{Content: "Bob's answer."}, llmtest.Reply{Content: "More on cats."})
	k := &talk{t: t, r: r}
	for _, step := range []struct{ in, want string }{
		{"/sessions", "No conversations in this chat yet."},
		{"/resume 1", `No conversation of this chat is "1": /sessions lists them.`},
		{"/resume", "Usage: /resume N|ID: a number of /sessions, or a session id (or its start)."},
		{"tell me about cats", "About cats."},
	} {
		if got := k.say("5", step.in); got != step.want {
			t.Fatalf("%s: %q, want %q", step.in, got, step.want)
		}
	}
	cats := k.sessionOf("5")
	k.say("5", "/new")
	if got := k.say("5", "and dogs?"); got != "About dogs." {
		t.Fatalf("answer: %q", got)
	}
	dogs := k.sessionOf("5")
	list := k.say("5", "/sessions")
	if !strings.HasPrefix(list, "Conversations in this chat, the latest first:\n1. \"and dogs?\" — 1 message(s), just now · "+dogs[:8]+" (this one)\n2. \"tell me about cats\" — 1 message(s), just now · "+cats[:8]+"\n") {
		t.Fatalf("/sessions:\n%s", list)
	}
	if !strings.HasSuffix(list, "/resume N goes on in number N.") {
		t.Fatalf("/sessions does not say how to resume:\n%s", list)
	}
	// Bob's chat has a session of its own; neither chat reaches the
	// other's, by id or by prefix.
	k.say("6", "hello")
	bob := k.sessionOf("6")
	for _, arg := range []string{cats, cats[:8], "zzzz"} {
		want := `No conversation of this chat is "` + arg + `": /sessions lists them.`
		if got := k.say("6", "/resume "+arg); got != want {
			t.Fatalf("bob's /resume %s: %q, want %q", arg, got, want)
		}
	}
	if got := k.say("5", "/resume "+bob); !strings.HasPrefix(got, "No conversation of this chat is") {
		t.Fatalf("/resume of another chat's session: %q", got)
	}
	if got := k.sessionOf("6"); got != bob {
		t.Fatalf("a refused /resume moved bob's chat to %s", got)
	}
	if got := k.say("5", "/resume 2"); got != `Resumed "tell me about cats", session `+cats+` (1 message(s)): your next message goes on in it.` {
		t.Fatalf("/resume 2: %q", got)
	}
	if got := k.say("5", "/resume "+cats[:6]); got != "This chat is in that conversation already." {
		t.Fatalf("/resume of the current one: %q", got)
	}
	if got := k.say("5", "more"); got != "More on cats." {
		t.Fatalf("after /resume: %q", got)
	}
	reqs := r.srv.Requests()
	if body := string(reqs[len(reqs)-1].Raw); !strings.Contains(body, "About cats.") || strings.Contains(body, "and dogs?") {
		t.Fatalf("the resumed turn did not go on in the cats conversation: %s", body)
	}
	if got := k.say("5", "/sessions"); !strings.Contains(got, "1. \"tell me about cats\" — 2 message(s)") || !strings.Contains(got, "2. \"and dogs?\"") {
		t.Fatalf("/sessions after /resume:\n%s", got)
	}
	waitFor(t, func() bool { return countTypes(t, r.store, "GatewayMessageDelivered") == k.n })
	r.stop()

	// The binding is an event: a restarted router goes on where /resume
	// left the chat, and /resume by number still works.
	r2 := newGwRig(t, dir, allowAll(), llmtest.Reply{Content: "Still cats."})
	k2 := &talk{t: t, r: r2}
	if got := k2.sessionOf("5"); got != cats {
		t.Fatalf("after a restart the chat is in %s, want %s", got, cats)
	}
	if got := k2.say("5", "/sessions 2"); !strings.HasPrefix(got, `Resumed "and dogs?", session `+dogs) {
		t.Fatalf("/sessions 2 after the restart: %q", got)
	}
}

// TestGatewayBranch: /branch forks the conversation; the chat goes on in
// the fork (after a restart too), the original stays as it was and is
// listed, and a title given is the fork's.
func TestGatewayBranch(t *testing.T) {
	dir := t.TempDir()
	r := newGwRig(t, dir, allowAll(), llmtest.Reply{Content: "Plan A."}, llmtest.Reply{Content: "Plan B."})
	k := &talk{t: t, r: r}
	if got := k.say("5", "/branch"); got != "No conversation yet." {
		t.Fatalf("/branch first: %q", got)
	}
	k.say("5", "make a plan")
	orig := k.sessionOf("5")
	got := k.say("5", "/fork Plan B")
	fork := k.sessionOf("5")
	if fork == orig || got != `Branched: this chat goes on in session `+fork+`, titled "Plan B"; the original `+orig+` stays as it was (/resume `+orig[:8]+` goes back).` {
		t.Fatalf("/fork: %q (now in %s, was %s)", got, fork, orig)
	}
	if got := k.say("5", "another way"); got != "Plan B." {
		t.Fatalf("answer in the fork: %q", got)
	}
	reqs := r.srv.Requests()
	if body := string(reqs[1].Raw); !strings.Contains(body, "Plan A.") {
		t.Fatalf("the fork lost the history: %s", body)
	}
	if strings.Contains(sessionText(t, r, orig), "another way") {
		t.Fatal("the original session got the fork's message")
	}
	if got := k.say("5", "/sessions"); !strings.Contains(got, "1. Plan B — 2 message(s)") || !strings.Contains(got, "2. \"make a plan\" — 1 message(s)") {
		t.Fatalf("/sessions after /branch:\n%s", got)
	}
	waitFor(t, func() bool { return countTypes(t, r.store, "GatewayMessageDelivered") == k.n })
	r.stop()
	r2 := newGwRig(t, dir, allowAll())
	if got := (&talk{t: t, r: r2}).sessionOf("5"); got != fork {
		t.Fatalf("after a restart the chat is in %s, want the fork %s", got, fork)
	}
}

// sessionText is the payloads of session id's events.
func sessionText(t *testing.T, r *gwRig, id string) string {
	t.Helper()
	rs, err := r.store.ReadStream(t.Context(), events.SessionStream(id), events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, rec := range rs {
		b.Write(rec.Payload)
	}
	return b.String()
}

// TestGatewayQueue: /queue with nothing running answers at once; while a
// turn runs it waits behind it without interrupting it, even with
// gateway.busy: interrupt, where a plain message would.
func TestGatewayQueue(t *testing.T) {
	cfg := allowAll()
	cfg.Busy = "interrupt"
	r := newGwRig(t, t.TempDir(), cfg,
		llmtest.Reply{Content: "Done at once."},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		llmtest.Reply{Content: "Not deleted."},
		llmtest.Reply{Content: "Then this, done."})
	k := &talk{t: t, r: r}
	if got := k.say("5", "/queue"); got != "Usage: /queue TEXT." {
		t.Fatalf("/queue alone: %q", got)
	}
	if got := k.say("5", "/q do it now"); got != "Done at once." {
		t.Fatalf("/queue with nothing running: %q", got)
	}
	if u := lastUser(t, r.srv.Requests()[0]); u != "do it now" {
		t.Fatalf("the model got %q", u)
	}
	// A turn waits for an approval: it runs until answered.
	if got := k.say("5", "clean the build dir"); !strings.Contains(got, "rm -rf build") {
		t.Fatalf("approval prompt: %q", got)
	}
	if got := k.say("5", "/queue then this"); got != "Queued (1 waiting): it is answered when the current turn ends." {
		t.Fatalf("/queue during a turn: %q", got)
	}
	time.Sleep(200 * time.Millisecond)
	if n := countTypes(t, r.store, "TurnInterrupted"); n != 0 {
		t.Fatal("/queue interrupted the running turn")
	}
	got := k.sayN("5", "/deny", 2)
	if got[0] != "Not deleted." || got[1] != "Then this, done." {
		t.Fatalf("after /deny: %q", got)
	}
	reqs := r.srv.Requests()
	if u := lastUser(t, reqs[len(reqs)-1]); u != "then this" {
		t.Fatalf("the queued turn sent %q", u)
	}
}

// TestGatewayBackground: /background runs its text in a session of its
// own; the chat is told it started, its answer arrives in the chat, and
// the chat's own conversation neither changes session nor sees it.
func TestGatewayBackground(t *testing.T) {
	r := newGwRig(t, t.TempDir(), allowAll(), llmtest.Reply{Content: "Hi."}, llmtest.Reply{Content: "A haiku."}, llmtest.Reply{Content: "Fine."})
	k := &talk{t: t, r: r}
	if got := k.say("5", "/bg"); got != "Usage: /background TEXT." {
		t.Fatalf("/bg alone: %q", got)
	}
	k.say("5", "hello")
	own := k.sessionOf("5")
	got := k.sayN("5", "/background write a haiku", 2)
	started, ok := strings.CutPrefix(got[0], "Started in the background as session ")
	if !ok {
		t.Fatalf("/background: %q", got)
	}
	bg, _, _ := strings.Cut(started, ":")
	if bg == own || got[1] != "Background task done (session "+bg+"):\n\nA haiku." {
		t.Fatalf("background answer %q (session %s, the chat's %s)", got[1], bg, own)
	}
	if u := lastUser(t, r.srv.Requests()[1]); u != "write a haiku" {
		t.Fatalf("the background turn sent %q", u)
	}
	if !strings.Contains(sessionText(t, r, bg), "write a haiku") || strings.Contains(sessionText(t, r, own), "haiku") {
		t.Fatal("the background turn did not run in its own session")
	}
	if got := k.sessionOf("5"); got != own {
		t.Fatalf("/background moved the chat to %s", got)
	}
	k.say("5", "how are you?")
	if body := string(r.srv.Requests()[2].Raw); strings.Contains(body, "haiku") || !strings.Contains(body, "Hi.") {
		t.Fatalf("the chat's turn saw the background one, or lost its own: %s", body)
	}
}

// TestGatewayVerboseAndReasoning: /verbose sets the chat's tool-progress
// mode and /reasoning shows the model's thinking above its answers; both
// are read back from the chat's stream after a restart.
func TestGatewayVerboseAndReasoning(t *testing.T) {
	dir := t.TempDir()
	r := newGwRig(t, dir, allowAll(),
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "terminal", Args: `{"command":"ls"}`}}},
		llmtest.Reply{Content: "Listed.", Reasoning: "The user wants the files.\nls shows them."})
	k := &talk{t: t, r: r}
	for _, step := range []struct{ in, want string }{
		{"/verbose", "Tool progress in this chat: new (a line when the tool changes)."},
		{"/verbose", "Tool progress in this chat: all (a line per tool call)."},
		{"/verbose loud", "Usage: /verbose [off|new|all|verbose]; alone, the next of them."},
		{"/reasoning", "The model's thinking is hidden in this chat (it is recorded with the session); /reasoning show shows it above each answer."},
		{"/reasoning maybe", "Usage: /reasoning show|hide (the reasoning effort is the provider's default in this build)."},
		{"/reasoning show", "The model's thinking is shown above its answers in this chat from the next one."},
	} {
		if got := k.say("5", step.in); got != step.want {
			t.Fatalf("%s: %q, want %q", step.in, got, step.want)
		}
	}
	waitFor(t, func() bool { return countTypes(t, r.store, "GatewayMessageDelivered") == k.n })
	r.stop()

	r2 := newGwRigOn(t, dir, "", true, allowAll(),
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "terminal", Args: `{"command":"ls"}`}}},
		llmtest.Reply{Content: "Listed.", Reasoning: "The user wants the files.\nls shows them."},
		llmtest.Reply{Content: "Plain.", Reasoning: "hidden now"})
	k2 := &talk{t: t, r: r2}
	if got := k2.say("5", "list the files"); got != "💭 Thinking:\n> The user wants the files.\n> ls shows them.\n\nListed." {
		t.Fatalf("answer with thinking: %q", got)
	}
	waitFor(t, func() bool { return len(progressOf(r2)) > 0 })
	if p := progressOf(r2); len(p) != 1 || p[0] != `💻 terminal: "ls"` {
		t.Fatalf("progress lines %q", p)
	}
	k2.say("5", "/verbose off")
	k2.say("5", "/reasoning hide")
	if got := k2.say("5", "and now?"); got != "Plain." {
		t.Fatalf("answer with thinking hidden: %q", got)
	}
}

// progressOf is the tool-progress messages the rig's platform got.
func progressOf(r *gwRig) []string {
	r.plat.mu.Lock()
	defer r.plat.mu.Unlock()
	var out []string
	for _, o := range r.plat.sent {
		if o.Kind == schema.OutboundProgress {
			out = append(out, o.Text)
		}
	}
	return out
}

// TestGatewayInfoCommands: /tools, /skills and /bundles answer through
// Config.Info, and say they are not available without it.
func TestGatewayInfoCommands(t *testing.T) {
	cfg := allowAll()
	var asked []string
	cfg.Info = func(_ context.Context, platform string, id command.ID, arg string) (string, error) {
		asked = append(asked, platform+" "+arg)
		if id == command.Bundles {
			return "", errors.New("no bundles here")
		}
		return fmt.Sprintf("info %d", id), nil
	}
	k := &talk{t: t, r: newGwRig(t, t.TempDir(), cfg)}
	if got := k.say("5", "/tools"); got != fmt.Sprintf("info %d", command.Tools) {
		t.Fatalf("/tools: %q", got)
	}
	if got := k.say("5", "/skills x"); got != fmt.Sprintf("info %d", command.Skills) {
		t.Fatalf("/skills: %q", got)
	}
	if got := k.say("5", "/bundles"); got != "No bundles here." {
		t.Fatalf("/bundles: %q", got)
	}
	if len(asked) != 3 || asked[1] != "testchat x" {
		t.Fatalf("asked %q", asked)
	}
	k2 := &talk{t: t, r: newGwRig(t, t.TempDir(), allowAll())}
	if got := k2.say("5", "/tools"); got != "/tools is not available here." {
		t.Fatalf("/tools without Info: %q", got)
	}
}

// TestGatewayCommandsSpelledForIRC: on IRC, whose clients keep "/…" for
// themselves, the help and the answers name the commands with "!".
func TestGatewayCommandsSpelledForIRC(t *testing.T) {
	r := newGwRigOn(t, t.TempDir(), "irc", false, allowAll())
	k := &talk{t: t, r: r}
	help := k.say("5", "/help")
	lines := strings.Split(help, "\n")
	if lines[0] != "Commands:" || len(lines) != len(command.Gateway.Commands())+1 {
		t.Fatalf("help:\n%s", help)
	}
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "!") || strings.Contains(l, " /") {
			t.Errorf("help line spelled for slash: %q", l)
		}
	}
	if got := k.say("5", "/stpo"); got != "Unknown command /stpo: did you mean !stop? !help lists the commands." {
		t.Fatalf("unknown on IRC: %q", got)
	}
	if got := k.say("5", "/sessions"); got != "No conversations in this chat yet." {
		t.Fatalf("/sessions on IRC: %q", got)
	}
	// Elsewhere the slash stays.
	k2 := &talk{t: t, r: newGwRig(t, t.TempDir(), allowAll())}
	if got := k2.say("5", "/help"); got != "Commands:\n"+command.Gateway.Help() {
		t.Fatalf("help off IRC:\n%s", got)
	}
}

// TestGatewayCommandsWithLazySessions: with Config.CreateSession (as
// hermes gateway runs), a chat's session is written by its first turn:
// /sessions shows a new conversation with nothing in it yet, /branch has
// nothing to fork, and /background creates its session in its turn.
func TestGatewayCommandsWithLazySessions(t *testing.T) {
	cfg := allowAll()
	var r *gwRig
	cfg.CreateSession = func(ctx context.Context, platform, id string) error {
		return session.Create(ctx, r.store, id, session.Start{Source: platform, Model: "gpt-4o-mini", System: "You are Hermes."})
	}
	r = newGwRig(t, t.TempDir(), cfg, llmtest.Reply{Content: "Hi."}, llmtest.Reply{Content: "Background answer."})
	k := &talk{t: t, r: r}
	k.say("5", "hello")
	first := k.sessionOf("5")
	k.say("5", "/new")
	now := k.sessionOf("5")
	list := k.say("5", "/sessions")
	if !strings.Contains(list, "\n1. (no messages yet) — 0 message(s), just now · "+now[:8]+" (this one)\n2. \"hello\" — 1 message(s), just now · "+first[:8]) {
		t.Fatalf("/sessions:\n%s", list)
	}
	if got := k.say("5", "/branch"); got != "No conversation yet." {
		t.Fatalf("/branch of a session not written yet: %q", got)
	}
	got := k.sayN("5", "/background do it", 2)
	if !strings.HasSuffix(got[1], "\n\nBackground answer.") {
		t.Fatalf("/background: %q", got)
	}
	if got := k.say("5", "/resume 2"); !strings.HasPrefix(got, `Resumed "hello", session `+first) {
		t.Fatalf("/resume 2: %q", got)
	}
}

// TestGatewayQueueAndBackgroundSurviveRestart: a /queue'd message and a
// /background turn cut short by a restart run after it, with the text
// they were given; the background one still answers as such and binds the
// chat to nothing.
func TestGatewayQueueAndBackgroundSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	hold := make(chan struct{})
	defer close(hold)
	r := newGwRig(t, dir, allowAll(), llmtest.Reply{Content: "Hi."}, llmtest.Reply{Content: "never", Wait: hold},
		llmtest.Reply{Content: "never", Wait: hold})
	k := &talk{t: t, r: r}
	k.say("5", "hello")
	own := k.sessionOf("5")
	started := k.say("5", "/bg write a haiku")
	bg, _, _ := strings.Cut(strings.TrimPrefix(started, "Started in the background as session "), ":")
	waitFor(t, func() bool { return len(r.srv.Requests()) == 2 })
	r.plat.send(t, dm("5", uuid.NewString(), "a long one"))
	waitFor(t, func() bool { return len(r.srv.Requests()) == 3 })
	if got := k.say("5", "/queue then this"); got != "Queued (1 waiting): it is answered when the current turn ends." {
		t.Fatalf("/queue: %q", got)
	}
	r.stop()

	r2 := newGwRig(t, dir, allowAll(), llmtest.Reply{Content: "Recovered."}, llmtest.Reply{Content: "Recovered."},
		llmtest.Reply{Content: "Recovered."})
	// The three recovered turns (the cut one, the queued one after it, the
	// background one beside them) end in any order: wait for all three.
	bgDone := "Background task done (session " + bg + "):\n\nRecovered."
	var texts []string
	waitFor(t, func() bool {
		texts = texts[:0]
		for _, o := range r2.plat.replies() {
			texts = append(texts, o.Text)
		}
		return slices.Contains(texts, bgDone) && len(slices.DeleteFunc(slices.Clone(texts), func(s string) bool { return s != "Recovered." })) >= 2
	})
	var users []string
	for _, req := range r2.srv.Requests() {
		users = append(users, lastUser(t, req))
	}
	slices.Sort(users)
	if want := []string{"a long one", "then this", "write a haiku"}; !slices.Equal(users, want) {
		t.Fatalf("the recovered turns sent %q, want %q", users, want)
	}
	waitFor(t, func() bool { return countTypes(t, r2.store, "GatewayMessageDelivered") >= 3 })
	if got := (&talk{t: t, r: r2, n: len(texts)}).sessionOf("5"); got != own {
		t.Fatalf("after the restart the chat is in %s, want %s", got, own)
	}
}

// TestGatewaySteer: /steer during a turn hands its text to the turn
// without interrupting it (the model reads it after the tool's result);
// with nothing running it is an ordinary message; alone it says how.
func TestGatewaySteer(t *testing.T) {
	r := newGwRig(t, t.TempDir(), allowAll(),
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		llmtest.Reply{Content: "Kept the build dir, used staging."},
		llmtest.Reply{Content: "Plain answer."})
	k := &talk{t: t, r: r}
	if got := k.say("5", "/steer"); got != "Usage: /steer TEXT." {
		t.Fatalf("/steer alone: %q", got)
	}
	// The turn waits for an approval: it runs until answered.
	if got := k.say("5", "clean the build dir"); !strings.Contains(got, "rm -rf build") {
		t.Fatalf("approval prompt: %q", got)
	}
	if got := k.say("5", "/steer use the staging database"); got != "Guidance sent: the agent reads it before its next step." {
		t.Fatalf("/steer during a turn: %q", got)
	}
	if n := countTypes(t, r.store, "TurnInterrupted"); n != 0 {
		t.Fatal("/steer interrupted the running turn")
	}
	if got := k.say("5", "/deny"); got != "Kept the build dir, used staging." {
		t.Fatalf("after /deny: %q", got)
	}
	reqs := r.srv.Requests()
	if u := lastUser(t, reqs[1]); u != history.SteerPrefix+"use the staging database" {
		t.Fatalf("the model's second call read %q last", u)
	}
	if got := k.say("5", "/steer now answer plainly"); got != "Plain answer." {
		t.Fatalf("/steer with nothing running: %q", got)
	}
	if u := lastUser(t, r.srv.Requests()[2]); u != "now answer plainly" {
		t.Fatalf("the model got %q", u)
	}
}
