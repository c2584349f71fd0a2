package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/gateway/telegram/telegramtest"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

const reviewedSkill = "---\nname: deploy-check\ndescription: Check a deploy before calling it done\n---\n\n1. Run the smoke tests against staging.\n2. Watch the error rate for five minutes.\n"

// reviewConfig is a home's config.yaml with a background review after
// two tool-calling steps, on its own model, memory reviews off.
func reviewConfig(t *testing.T, extra string) string {
	t.Helper()
	home := t.TempDir()
	cfg := "model: main-model\nskills:\n  creation_nudge_interval: 2\n" + extra + "memory:\n  nudge_interval: 0\nauxiliary:\n  background_review:\n    model: review-model\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// reviewServer answers the main model from main and the review's model
// (review-model) from review, each in order; a request past a script's
// end is an error answer.
type reviewServer struct {
	*llmtest.Server
	mu           sync.Mutex
	main, review []llmtest.Reply
	reviews      int
	// hook, when set, sees every main request first.
	hook func(llmtest.Request)
}

func newReviewServer(main, review []llmtest.Reply) *reviewServer {
	s := &reviewServer{Server: llmtest.New(), main: main, review: review}
	s.SetRoute(func(r llmtest.Request) *llmtest.Reply {
		s.mu.Lock()
		defer s.mu.Unlock()
		pop := func(q *[]llmtest.Reply) *llmtest.Reply {
			if len(*q) == 0 {
				return &llmtest.Reply{Status: 500, ErrorBody: `{"error":{"message":"script exhausted"}}`}
			}
			rep := (*q)[0]
			*q = (*q)[1:]
			return &rep
		}
		if r.Body["model"] == "review-model" {
			s.reviews++
			return pop(&s.review)
		}
		if s.hook != nil {
			s.hook(r)
		}
		return pop(&s.main)
	})
	return s
}

func (s *reviewServer) reviewCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reviews
}

// busyTurn is a turn of two tool-calling steps, then an answer.
func busyTurn(answer string) []llmtest.Reply {
	return []llmtest.Reply{
		{ToolCalls: []llmtest.ToolCall{{Name: "skills_list", Args: `{}`}}},
		{ToolCalls: []llmtest.ToolCall{{Name: "skills_list", Args: `{}`}}},
		{Content: answer},
	}
}

// createsSkill is a review that creates deploy-check.
func createsSkill() []llmtest.Reply {
	args, _ := json.Marshal(map[string]string{"action": "create", "name": "deploy-check", "content": reviewedSkill})
	return []llmtest.Reply{
		{ToolCalls: []llmtest.ToolCall{{Name: "skill_manage", Args: string(args)}}},
		{Content: "Saved deploy-check."},
	}
}

// readStore reads a home's events after the binary ended.
func readStore(t *testing.T, home, stream string) []events.Recorded {
	t.Helper()
	store, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rs, err := store.ReadStream(context.Background(), stream, events.Forward, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func decoded(t *testing.T, rs []events.Recorded, typ string) []schema.Payload {
	t.Helper()
	var out []schema.Payload
	for _, r := range rs {
		if r.Type == typ {
			p, err := schema.Decode(r.Envelope)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, p)
		}
	}
	return out
}

func systemOf(r llmtest.Request) string {
	msgs, _ := r.Body["messages"].([]any)
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "system" {
			s, _ := mm["content"].(string)
			return s
		}
	}
	return ""
}

// TestBackgroundReviewLearnsAndUndoes: a busy turn starts a review (a
// child session of the turn, on the review's model, with the memory and
// skill tools alone) whose decision creates a skill authored by the
// review; the chat shows the note; the next session loads the skill; a
// turn below the threshold starts none; undo archives the skill.
func TestBackgroundReviewLearnsAndUndoes(t *testing.T) {
	home := reviewConfig(t, "")
	srv := newReviewServer(append(busyTurn("Deployed."), llmtest.Reply{Content: "Hello again."}, llmtest.Reply{Content: "Third."}), createsSkill())
	defer srv.Close()
	env := chatEnv(srv.Server)
	h := func(args ...string) (string, string, int) {
		t.Helper()
		return hermes(t, env, "", append([]string{"--home", home}, args...)...)
	}
	must := func(args ...string) (string, string) {
		t.Helper()
		out, errOut, code := h(args...)
		if code != 0 {
			t.Fatalf("hermes %v: exit %d\n%s\n%s", args, code, out, errOut)
		}
		return out, errOut
	}
	out, errOut := must("chat", "-q", "deploy the service")
	if !strings.Contains(out, "Deployed.") || !strings.Contains(errOut, "review: learned: created skill deploy-check (undo: hermes review undo ") {
		t.Fatalf("chat:\n%s\n%s", out, errOut)
	}
	parent := sessionIDFrom(t, errOut)

	// The review's request: its own model, the conversation, only the
	// memory and skill tools.
	var reviewReq *llmtest.Request
	for _, r := range srv.Requests() {
		if r.Body["model"] == "review-model" {
			reviewReq = &r
			break
		}
	}
	if reviewReq == nil {
		t.Fatal("no request on the review's model")
	}
	var tools []string
	for _, tl := range reviewReq.Body["tools"].([]any) {
		tools = append(tools, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
	}
	for _, n := range tools {
		if n != "memory" && n != "skill_manage" && n != "skills_list" && n != "skill_view" {
			t.Fatalf("the review was offered %s (tools %v)", n, tools)
		}
	}
	if !strings.Contains(string(reviewReq.Raw), "deploy the service") {
		t.Fatal("the review did not read the conversation")
	}

	// Lineage: the parent records ReviewSpawned; the review's session
	// names the parent's turn.
	spawned := decoded(t, readStore(t, home, events.SessionStream(parent)), schema.TypeReviewSpawned)
	if len(spawned) != 1 || !spawned[0].(schema.ReviewSpawned).Skills {
		t.Fatalf("spawned %v", spawned)
	}
	reviewID := spawned[0].(schema.ReviewSpawned).ReviewID
	rs := readStore(t, home, events.SessionStream(reviewID))
	start := decoded(t, rs, schema.TypeSessionStarted)[0].(schema.SessionStarted)
	if start.Reason != schema.StartReview || start.ParentSessionID != parent || start.ParentTurnID == "" || start.Model != "review-model" {
		t.Fatalf("review session start %+v", start)
	}
	if len(decoded(t, rs, schema.TypeSessionEnded)) != 1 {
		t.Fatal("the review's session did not end")
	}
	fins := decoded(t, readStore(t, home, "reviews"), schema.TypeReviewFinished)
	if len(fins) != 1 || fins[0].(schema.ReviewFinished).Status != schema.ReviewCompleted || len(fins[0].(schema.ReviewFinished).Changes) != 1 {
		t.Fatalf("finished %+v", fins)
	}

	// The skill is the review's, in its history and on disk.
	hist, _ := must("skills", "history", "deploy-check")
	if !strings.Contains(lastLine(hist), "review "+reviewID[:8]) {
		t.Fatalf("history:\n%s", hist)
	}
	skillFile := filepath.Join(home, "skills", "deploy-check", "SKILL.md")
	if b, err := os.ReadFile(skillFile); err != nil || string(b) != reviewedSkill {
		t.Fatalf("SKILL.md %q %v", b, err)
	}
	list, _ := must("review", "list")
	if !regexp.MustCompile(reviewID[:8] + `.*` + parent[:8] + `\s+completed\s+.*learned: created skill deploy-check`).MatchString(list) {
		t.Fatalf("review list:\n%s", list)
	}

	// The next session loads it; its one plain turn is below the
	// threshold: no review.
	n := len(srv.Requests())
	must("chat", "-q", "hello")
	if s := systemOf(srv.Requests()[n]); !strings.Contains(s, "deploy-check") {
		t.Fatalf("the next session's prompt lacks the skill:\n%s", s)
	}
	if srv.reviewCalls() != 2 || len(decoded(t, readStore(t, home, "reviews"), schema.TypeReviewStarted)) != 1 {
		t.Fatalf("a turn below the threshold was reviewed (%d review calls)", srv.reviewCalls())
	}

	// Undo: the skill is archived, by an event of its own.
	out, _ = must("review", "undo", reviewID[:8])
	if !strings.Contains(out, "undone: archived skill deploy-check") {
		t.Fatalf("undo:\n%s", out)
	}
	if _, err := os.Stat(skillFile); !os.IsNotExist(err) {
		t.Fatalf("the skill is still on disk: %v", err)
	}
	if last := lastLine(mustOut(t, h, "skills", "history", "deploy-check")); !strings.Contains(last, "archive") || !strings.Contains(last, "undo of review "+reviewID[:8]) {
		t.Fatalf("history after undo: %s", last)
	}
	if list, _ := must("review", "list"); !strings.Contains(list, "completed, undone") {
		t.Fatalf("review list after undo:\n%s", list)
	}
	if _, errOut, code := h("review", "undo", reviewID[:8]); code == 0 || !strings.Contains(errOut, "undone already") {
		t.Fatalf("second undo: exit %d %s", code, errOut)
	}
	if _, errOut, code := h("review", "undo", "nosuchid"); code == 0 || !strings.Contains(errOut, "no background review") {
		t.Fatalf("undo of nothing: exit %d %s", code, errOut)
	}
	n = len(srv.Requests())
	must("chat", "-q", "and now?")
	if s := systemOf(srv.Requests()[n]); strings.Contains(s, "deploy-check") {
		t.Fatal("the undone skill is still loaded")
	}
}

func mustOut(t *testing.T, h func(args ...string) (string, string, int), args ...string) string {
	t.Helper()
	out, errOut, code := h(args...)
	if code != 0 {
		t.Fatalf("hermes %v: exit %d\n%s", args, code, errOut)
	}
	return out
}

// TestBackgroundReviewOff: skills.background_review: false runs none,
// however busy the turn.
func TestBackgroundReviewOff(t *testing.T) {
	home := reviewConfig(t, "  background_review: false\n")
	srv := newReviewServer(busyTurn("Deployed."), createsSkill())
	defer srv.Close()
	out, errOut, code := hermes(t, chatEnv(srv.Server), "", "--home", home, "chat", "-q", "deploy the service")
	if code != 0 || !strings.Contains(out, "Deployed.") {
		t.Fatalf("chat: exit %d\n%s\n%s", code, out, errOut)
	}
	id := sessionIDFrom(t, errOut)
	if srv.reviewCalls() != 0 || strings.Contains(errOut, "review:") || len(decoded(t, readStore(t, home, events.SessionStream(id)), schema.TypeReviewSpawned)) != 0 {
		t.Fatalf("a review ran with the switch off:\n%s", errOut)
	}
	if out, _, _ := hermes(t, chatEnv(srv.Server), "", "--home", home, "review", "list"); !strings.Contains(out, "no background reviews yet") {
		t.Fatalf("review list:\n%s", out)
	}
}

// TestBackgroundReviewDoesNotDelayTheNextTurn: the review's model holds
// its answer until the chat's third turn has started, so the second turn
// runs (and ends) while the review waits: the events say so.
func TestBackgroundReviewDoesNotDelayTheNextTurn(t *testing.T) {
	home := reviewConfig(t, "")
	release := make(chan struct{})
	var once sync.Once
	review := createsSkill()
	review[0].Wait = release
	srv := newReviewServer(append(busyTurn("Deployed."), llmtest.Reply{Content: "Second answer."}, llmtest.Reply{Content: "Third answer."}), review)
	defer srv.Close()
	srv.hook = func(r llmtest.Request) {
		// The chat reads its next line only once the turn before ended:
		// the third turn's request means the second turn is done.
		if strings.Contains(string(r.Raw), "third question") {
			once.Do(func() { close(release) })
		}
	}
	out, errOut, code := hermes(t, chatEnv(srv.Server), "deploy the service\nsecond question\nthird question\n", "--home", home, "chat")
	if code != 0 || !strings.Contains(out, "Third answer.") {
		t.Fatalf("chat: exit %d\n%s\n%s", code, out, errOut)
	}
	once.Do(func() { close(release) })
	id := sessionIDFrom(t, errOut)
	var secondDone uint64
	turns := 0
	for _, r := range readStore(t, home, events.SessionStream(id)) {
		if r.Type == schema.TypeTurnCompleted {
			if turns++; turns == 2 {
				secondDone = r.Position
			}
		}
	}
	var started, finished uint64
	for _, r := range readStore(t, home, "reviews") {
		switch r.Type {
		case schema.TypeReviewStarted:
			started = r.Position
		case schema.TypeReviewFinished:
			finished = r.Position
		}
	}
	if secondDone == 0 || started == 0 || finished == 0 || !(started < secondDone && secondDone < finished) {
		t.Fatalf("review started at %d, finished at %d; the second turn ended at %d", started, finished, secondDone)
	}
	if !strings.Contains(errOut, "review: learned: created skill deploy-check") {
		t.Fatalf("no note:\n%s", errOut)
	}
}

// TestBackgroundReviewKilledIsAbandoned: hermes is killed (SIGKILL)
// while its review waits for the model; the next start records the
// review as abandoned, closing its session's open turn, and the review
// is listed so.
func TestBackgroundReviewKilledIsAbandoned(t *testing.T) {
	home := reviewConfig(t, "")
	never := make(chan struct{})
	defer close(never)
	review := createsSkill()
	review[0].Wait = never
	srv := newReviewServer(append(busyTurn("Deployed."), llmtest.Reply{Content: "Back."}), review)
	defer srv.Close()
	cmd := exec.Command(bin, "--home", home, "chat", "-q", "deploy the service")
	cmd.Env = chatEnv(srv.Server)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for srv.reviewCalls() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if srv.reviewCalls() == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the review never called its model")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	list := mustOut(t, func(args ...string) (string, string, int) { return hermes(t, chatEnv(srv.Server), "", args...) }, "--home", home, "review", "list")
	if !strings.Contains(list, "running") {
		t.Fatalf("before the restart the review should still look open:\n%s", list)
	}

	out, errOut, code := hermes(t, chatEnv(srv.Server), "", "--home", home, "chat", "-q", "hello")
	if code != 0 || !strings.Contains(out, "Back.") {
		t.Fatalf("restart: exit %d\n%s\n%s", code, out, errOut)
	}
	rv := readStore(t, home, "reviews")
	fins := decoded(t, rv, schema.TypeReviewFinished)
	if len(fins) != 1 || fins[0].(schema.ReviewFinished).Status != schema.ReviewAbandoned {
		t.Fatalf("finished %+v", fins)
	}
	id := fins[0].(schema.ReviewFinished).ReviewID
	rs := readStore(t, home, events.SessionStream(id))
	if len(rs) < 2 || rs[len(rs)-2].Type != schema.TypeTurnInterrupted || rs[len(rs)-1].Type != schema.TypeSessionEnded {
		var types []string
		for _, r := range rs {
			types = append(types, r.Type)
		}
		t.Fatalf("the review's session ends %v", types)
	}
	if list := mustOut(t, func(args ...string) (string, string, int) { return hermes(t, chatEnv(srv.Server), "", args...) }, "--home", home, "review", "list"); !strings.Contains(list, "abandoned") {
		t.Fatalf("review list:\n%s", list)
	}
	if _, err := os.Stat(filepath.Join(home, "skills", "deploy-check")); err == nil {
		t.Fatal("the abandoned review wrote its skill")
	}
}

// In a gateway chat, the review's note reaches the chat whose session it
// read, after the answer.
func TestBackgroundReviewNoteInTelegram(t *testing.T) {
	emu := telegramtest.Start(t)
	home := reviewConfig(t, "")
	srv := newReviewServer(busyTurn("Deployed."), createsSkill())
	defer srv.Close()
	env := telegramEnv(emu, srv.Server)
	alice := telegramtest.User{ID: 111, FirstName: "Alice", Username: "alice"}
	startGateway(t, home, env)
	if err := emu.Send(context.Background(), telegramtest.Token, telegramtest.DM(alice, "deploy the service")); err != nil {
		t.Fatal(err)
	}
	got := emu.WaitReceived(t, telegramtest.Token, alice.ID, 2, 60*time.Second)
	if got[0].Message.Text != "Deployed." || !strings.HasPrefix(got[1].Message.Text, "review: learned: created skill deploy-check") {
		t.Fatalf("received %q then %q", got[0].Message.Text, got[1].Message.Text)
	}
}

// A memory review saves what the user said about themselves; undo removes
// the entry. With the review gate on, the review's change waits for
// approval, and undo rejects it.
func TestBackgroundReviewMemoryUndo(t *testing.T) {
	for _, gate := range []bool{false, true} {
		t.Run(fmt.Sprintf("write_approval=%v", gate), func(t *testing.T) {
			home := t.TempDir()
			cfg := "model: main-model\nskills:\n  creation_nudge_interval: 0\nmemory:\n  nudge_interval: 1\n" + fmt.Sprintf("  write_approval: %v\n", gate) +
				"auxiliary:\n  background_review:\n    model: review-model\n"
			if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			srv := newReviewServer([]llmtest.Reply{{Content: "Noted."}}, []llmtest.Reply{
				{ToolCalls: []llmtest.ToolCall{{Name: "memory", Args: `{"action":"add","target":"user","content":"Prefers terse answers."}`}}},
				{Content: "Saved a preference."},
			})
			defer srv.Close()
			h := func(args ...string) (string, string, int) {
				return hermes(t, chatEnv(srv.Server), "", append([]string{"--home", home}, args...)...)
			}
			_, errOut := func() (string, string) {
				out, errOut, code := h("chat", "-q", "I like terse answers")
				if code != 0 {
					t.Fatalf("chat: %d\n%s\n%s", code, out, errOut)
				}
				return out, errOut
			}()
			userMD := filepath.Join(home, "memories", "USER.md")
			b, _ := os.ReadFile(userMD)
			if gate {
				if !strings.Contains(errOut, "review: learned: 1 memory change awaiting /memory approval") || strings.Contains(string(b), "terse") {
					t.Fatalf("gated: %q\n%s", b, errOut)
				}
			} else if !strings.Contains(errOut, "review: learned: 1 memory entry updated") || !strings.Contains(string(b), "Prefers terse answers.") {
				t.Fatalf("USER.md %q\n%s", b, errOut)
			}
			id := regexp.MustCompile(`hermes review undo (\S+)\)`).FindStringSubmatch(errOut)
			if id == nil {
				t.Fatalf("no undo id in\n%s", errOut)
			}
			out := mustOut(t, h, "review", "undo", id[1])
			want := "undone: removed user entry \"Prefers terse answers.\""
			if gate {
				want = "undone: rejected staged memory change "
			}
			if !strings.Contains(out, want) {
				t.Fatalf("undo:\n%s", out)
			}
			if b, _ := os.ReadFile(userMD); strings.Contains(string(b), "terse") {
				t.Fatalf("USER.md after undo %q", b)
			}
			if gate {
				if st := mustOut(t, h, "memory", "status"); strings.Contains(st, "terse") {
					t.Fatalf("the staged change still waits:\n%s", st)
				}
			}
		})
	}
}
