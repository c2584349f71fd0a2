package conformance

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/adapters/gateway/gatewaytest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/schema"
)

const answer = "Paris is the capital of France."

// An allowed user's message reaches the model; its answer arrives once.
func caseAnswer(e *env) {
	e.start(gateway.Config{}, llmtest.Reply{Content: answer})
	alice := e.users.Alice
	e.send(alice, DM, "capital of France?")
	got := e.waitMessages(alice, DM, 1)
	if strings.TrimSpace(got[0].Text) != answer {
		e.t.Fatalf("answer %q, want %q", got[0].Text, answer)
	}
	if n := len(e.llm.Requests()); n != 1 {
		e.t.Fatalf("%d model calls, want 1", n)
	}
	if txt := e.lastUserText(); !strings.Contains(txt, "capital of France?") {
		e.t.Fatalf("the model saw %q", txt)
	}
	e.waitCount(schema.TypeGatewayMessageDelivered, 1)
	e.quiet(alice, DM, 1)
}

// A stranger gets a pairing code and nothing else; the code, once
// approved, lets them in.
func casePairing(e *env) {
	e.start(gateway.Config{}, llmtest.Reply{Content: "welcome"})
	s := e.users.Stranger
	e.send(s, DM, "let me in")
	notice := e.waitText(s, DM, "hermes pairing approve ")
	_, after, _ := strings.Cut(notice.Text, "hermes pairing approve ")
	code := strings.Fields(after)[0]
	if len(code) != gateway.CodeLength {
		e.t.Fatalf("code %q in %q", code, notice.Text)
	}
	// Nothing else: the notice (however many messages the platform cut
	// it into) and no answer.
	n := len(e.received(s, DM))
	e.quiet(s, DM, n)
	if n := len(e.llm.Requests()); n != 0 {
		e.t.Fatalf("the model was called %d times for a stranger", n)
	}
	if n := e.count(schema.TypeGatewaySessionBound); n != 0 {
		e.t.Fatalf("a stranger got %d sessions", n)
	}
	if n := e.count(schema.TypeGatewayInboundRefused); n != 1 {
		e.t.Fatalf("%d refusals recorded, want 1", n)
	}
	ctx := context.Background()
	p, err := gateway.LoadPairings(ctx, e.rig.Store)
	if err != nil {
		e.t.Fatal(err)
	}
	who, err := p.Approve(ctx, e.rig.Store, code, time.Now())
	if err != nil || who.User != s.ID() || who.Platform != e.peer.Name() {
		e.t.Fatalf("approving the code: %v, %+v (want user %s)", err, who, s.ID())
	}
	e.send(s, DM, "hello again")
	got := e.waitMessages(s, DM, n+1)
	if strings.TrimSpace(got[n].Text) != "welcome" {
		e.t.Fatalf("after pairing: %q", got[n].Text)
	}
}

// longAnswer is about 3.5 limits of prose with multi-byte runes and
// paragraphs, and no word longer than a few bytes.
func longAnswer(limit int) string {
	words := []string{"the", "naïve", "café", "über", "quick", "fox", "日本語", "jumps", "ünïcödé", "over", "lazy", "dogs", "∑x²", "ok"}
	var b strings.Builder
	for i := 0; b.Len() < limit*7/2; i++ {
		b.WriteString(words[i%len(words)])
		switch {
		case i%97 == 96:
			b.WriteString(".\n\n")
		case i%31 == 30:
			b.WriteString(".\n")
		default:
			b.WriteByte(' ')
		}
	}
	return strings.TrimSpace(b.String()) + "."
}

// An answer over the platform's limit is split into messages within it,
// in order, losing nothing but whitespace.
func caseSplit(e *env) {
	if e.caps.Limit <= 0 {
		e.t.Skipf("%s declares no message length limit", e.peer.Name())
	}
	long := longAnswer(e.caps.Limit)
	e.start(gateway.Config{}, llmtest.Reply{Content: long})
	alice := e.users.Alice
	e.send(alice, DM, "tell me a long story")
	e.waitCount(schema.TypeGatewayMessageDelivered, 1)
	want := strings.Fields(long)
	// Wait for the whole answer, or for the messages to stop coming (a
	// platform that loses text never gets there).
	var got []Message
	last, since := -1, time.Now()
	e.waitFor("the whole answer", func() bool {
		got = e.received(alice, DM)
		if len(got) != last {
			last, since = len(got), time.Now()
		}
		return len(joinFields(got)) >= len(want) || (len(got) > 0 && time.Since(since) > settle)
	}, func() string { return texts(got) })
	if len(got) < 2 {
		e.t.Fatalf("an answer of %d bytes over a limit of %d came as %d message(s)", len(long), e.caps.Limit, len(got))
	}
	for i, m := range got {
		size := m.Size
		if size == 0 {
			size = utf8.RuneCountInString(m.Text)
		}
		if size > e.caps.Limit {
			e.t.Errorf("part %d has size %d, over the limit of %d", i, size, e.caps.Limit)
		}
		if !utf8.ValidString(m.Text) {
			e.t.Errorf("part %d is not valid UTF-8 (a rune was split)", i)
		}
	}
	if g := joinFields(got); strings.Join(g, " ") != strings.Join(want, " ") {
		e.t.Fatalf("the parts put together differ from the answer:\n got %q\nwant %q", strings.Join(g, " "), strings.Join(want, " "))
	}
	e.quiet(alice, DM, len(got))
}

func joinFields(ms []Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, strings.Fields(m.Text)...)
	}
	return out
}

// specials are Markdown's, MarkdownV2's and HTML's special characters,
// none forming markup, and unicode beyond the BMP.
const specials = "Specials: * _ [ ] ( ) ~ ` > # + - = | { } . ! < & > \\ \" ' and unicode: naïve café — 你好 🚀 ∑x² ✓"

// codeLine is the one line of codeAnswer's fence.
const codeLine = "if a < b && c > d { fmt.Println(`*x*`, \"_y_\", m[k]) } // #1 ~ok~"

const codeAnswer = "Here is the code:\n\n```go\n" + codeLine + "\n```\n\nDone."

// Special characters arrive intact both ways; a code fence's content
// arrives as written.
func caseFormatting(e *env) {
	e.start(gateway.Config{}, llmtest.Reply{Content: specials}, llmtest.Reply{Content: codeAnswer})
	alice := e.users.Alice
	question := "echo *_[]()~`>#+-=|{}.!<&> ünï 🚀"
	e.send(alice, DM, question)
	got := e.waitMessages(alice, DM, 1)
	if norm(got[0].Text) != norm(specials) {
		e.t.Fatalf("special characters changed:\n got %q\nwant %q", got[0].Text, specials)
	}
	if txt := e.lastUserText(); !strings.Contains(txt, question) {
		e.t.Fatalf("the model saw %q, the user wrote %q", txt, question)
	}
	e.send(alice, DM, "show me code")
	e.waitText(alice, DM, "Done.")
	got = e.received(alice, DM)
	var all strings.Builder
	for _, m := range got[1:] {
		all.WriteString(m.Text + "\n")
	}
	for _, want := range []string{codeLine, "Here is the code:", "Done."} {
		if !strings.Contains(all.String(), want) {
			e.t.Fatalf("the code answer lost %q:\n%s", want, all.String())
		}
	}
}

// norm collapses whitespace runs.
func norm(s string) string { return strings.Join(strings.Fields(s), " ") }

// /stop stops a turn in flight; /new starts a conversation without the
// earlier one's history.
func caseNewAndStop(e *env) {
	e.start(gateway.Config{},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "s1", Name: "slow", Args: `{}`}}},
		llmtest.Reply{Content: "first answer"},
		llmtest.Reply{Content: "fresh answer"})
	alice := e.users.Alice
	e.send(alice, DM, "something slow")
	e.waitCount(schema.TypeToolCallStarted, 1)
	e.send(alice, DM, "/stop")
	got := e.waitMessages(alice, DM, 1)
	if strings.TrimSpace(got[0].Text) != "Stopped." {
		e.t.Fatalf("/stop answered %q", got[0].Text)
	}
	e.send(alice, DM, "remember the word kiwi")
	got = e.waitMessages(alice, DM, 2)
	if strings.TrimSpace(got[1].Text) != "first answer" {
		e.t.Fatalf("after /stop: %q", got[1].Text)
	}
	e.send(alice, DM, "/new")
	got = e.waitMessages(alice, DM, 3)
	if !strings.Contains(got[2].Text, "New conversation") {
		e.t.Fatalf("/new answered %q", got[2].Text)
	}
	e.send(alice, DM, "what was the word?")
	got = e.waitMessages(alice, DM, 4)
	if strings.TrimSpace(got[3].Text) != "fresh answer" {
		e.t.Fatalf("after /new: %q", got[3].Text)
	}
	if txt := e.lastUserText(); strings.Contains(txt, "kiwi") || !strings.Contains(txt, "what was the word?") {
		e.t.Fatalf("the conversation after /new carries the old one: %q", txt)
	}
	if n := e.count(schema.TypeGatewaySessionBound); n != 2 {
		e.t.Fatalf("%d sessions bound, want 2", n)
	}
}

// In a group the bot answers only when mentioned, in the group.
func caseGroupMention(e *env) {
	if !e.caps.Groups {
		e.t.Skipf("%s has no group chats", e.peer.Name())
	}
	e.start(gateway.Config{}, llmtest.Reply{Content: "in the group"})
	alice, bob := e.users.Alice, e.users.Bob
	e.send(alice, Group, "chatting among ourselves")
	e.send(alice, Group, e.peer.Mention("what do you think?"))
	got := e.waitMessages(alice, Group, 1)
	if strings.TrimSpace(got[0].Text) != "in the group" {
		e.t.Fatalf("answer %q", got[0].Text)
	}
	reqs := e.llm.Requests()
	if len(reqs) != 1 {
		e.t.Fatalf("%d model calls, want 1 (only the mention)", len(reqs))
	}
	if txt := userTexts(reqs[0]); strings.Contains(txt, "among ourselves") || !strings.Contains(txt, "what do you think?") {
		e.t.Fatalf("the model saw %q", txt)
	}
	// The answer went to the group: the other member sees it.
	e.waitMessages(bob, Group, 1)
	e.quiet(alice, Group, 1)
}

// A dangerous command's approval goes to the session's user; another
// allowed user's answer is refused; the session's user's answer lets it run.
func caseApproval(e *env) {
	where := DM
	cfg := gateway.Config{}
	if e.caps.Groups {
		// One session for the whole group: both users are in the chat
		// the question is asked in.
		where, cfg.SharedGroupSessions = Group, true
	}
	e.start(cfg,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		llmtest.Reply{Content: "deleted"})
	alice, bob := e.users.Alice, e.users.Bob
	ask := "clean the build dir"
	if where == Group {
		ask = e.peer.Mention(ask)
	}
	e.send(alice, where, ask)
	q := e.waitText(alice, where, "rm -rf build")
	ctx := context.Background()
	if where == Group {
		if err := bob.Answer(ctx, where, q, "once"); err != nil {
			e.t.Fatal(err)
		}
		e.waitFor("the other user's answer to be refused", func() bool {
			return strings.Contains(gatewaytest.Payloads(e.t, e.rig.Store), "approval answered by someone other than the session's user")
		}, nil)
		if n := e.count(schema.TypeApprovalDecided); n != 0 {
			e.t.Fatal("another user's answer decided the approval")
		}
	} else {
		e.t.Logf("%s has no group chats: no other user can see the question, so the refusal of another user's answer is not checked", e.peer.Name())
	}
	if err := alice.Answer(ctx, where, q, "once"); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor("the answer after the approval", func() bool {
		for _, m := range e.received(alice, where) {
			if strings.TrimSpace(m.Text) == "deleted" {
				return true
			}
		}
		return false
	}, func() string { return texts(e.received(alice, where)) })
	if !strings.Contains(gatewaytest.Payloads(e.t, e.rig.Store), `"decision":"once","by":"user"`) {
		e.t.Fatal("the decision is not recorded as the user's")
	}
}

// The server restarts while a turn runs: the answer arrives once, after
// the adapter reconnected, and the conversation goes on both ways.
func casePeerRestart(e *env) {
	if !e.caps.Restart {
		e.t.Skipf("%s cannot restart its server", e.peer.Name())
	}
	e.start(gateway.Config{},
		llmtest.Reply{Content: "before the restart"},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "w1", Name: "wait", Args: `{}`}}},
		llmtest.Reply{Content: "after the restart"},
		llmtest.Reply{Content: "still here"})
	alice := e.users.Alice
	e.send(alice, DM, "hello")
	e.waitMessages(alice, DM, 1)
	e.send(alice, DM, "take your time")
	e.waitCount(schema.TypeToolCallStarted, 1)
	e.peer.Restart(e.t)
	close(e.gate)
	got := e.waitMessages(alice, DM, 2)
	if strings.TrimSpace(got[1].Text) != "after the restart" {
		e.t.Fatalf("the answer in flight during the restart: %q", got[1].Text)
	}
	e.send(alice, DM, "are you there?")
	got = e.waitMessages(alice, DM, 3)
	if strings.TrimSpace(got[2].Text) != "still here" {
		e.t.Fatalf("after the restart: %q", got[2].Text)
	}
	got = e.quiet(alice, DM, 3)
	if n := count(got, "after the restart"); n != 1 {
		e.t.Fatalf("the answer in flight arrived %d times", n)
	}
	e.waitCount(schema.TypeGatewayMessageDelivered, 3)
	if n := e.count(schema.TypeGatewayDeliveryFailed); n != 0 {
		e.t.Fatalf("%d deliveries failed", n)
	}
}

// The gateway dies mid-turn; started again on the same store, it finishes
// the turn and delivers the answer once. Dead again after that delivery,
// it sends nothing twice.
func caseCrash(e *env) {
	e.start(gateway.Config{}, llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "s1", Name: "slow", Args: `{}`}}})
	alice := e.users.Alice
	e.send(alice, DM, "long task")
	e.waitCount(schema.TypeToolCallStarted, 1)
	e.crash()
	e.start(gateway.Config{}, llmtest.Reply{Content: "finished after the crash"})
	got := e.waitMessages(alice, DM, 1)
	if strings.TrimSpace(got[0].Text) != "finished after the crash" {
		e.t.Fatalf("after the crash: %q", got[0].Text)
	}
	if n := e.count(schema.TypeUserMessageAdded); n != 1 {
		e.t.Fatalf("the user's message entered the session %d times", n)
	}
	e.waitCount(schema.TypeGatewayMessageDelivered, 1)
	// Dead again after the delivery was recorded: nothing is sent twice,
	// and the chat goes on.
	e.crash()
	e.start(gateway.Config{}, llmtest.Reply{Content: "still here"})
	e.quiet(alice, DM, 1)
	e.send(alice, DM, "are you there?")
	got = e.waitMessages(alice, DM, 2)
	if strings.TrimSpace(got[1].Text) != "still here" {
		e.t.Fatalf("after the second crash: %q", got[1].Text)
	}
	e.quiet(alice, DM, 2)
}
