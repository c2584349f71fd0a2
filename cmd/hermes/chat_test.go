package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/events"
	"github.com/hermes-go/hermes/events/embedded"
	"github.com/hermes-go/hermes/schema"
)

// chatEnv runs hermes with a clean environment pointing at srv.
func chatEnv(srv *llmtest.Server, extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=sk-test"}
	return append(env, extra...)
}

func hermes(t *testing.T, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func sessionIDFrom(t *testing.T, stderr string) string {
	t.Helper()
	for _, l := range strings.Split(stderr, "\n") {
		if id, ok := strings.CutPrefix(l, "session: "); ok {
			return strings.TrimSpace(id)
		}
	}
	t.Fatalf("no session line in stderr:\n%s", stderr)
	return ""
}

func TestChatOneShot(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "Paris.", Prompt: 50, Completion: 2})
	defer srv.Close()
	home := t.TempDir()
	out, errOut, code := hermes(t, chatEnv(srv), "", "--home", home, "chat", "-q", "Capital of France?", "--model", "gpt-4o-mini")
	if code != 0 || out != "Paris.\n" {
		t.Fatalf("exit %d stdout %q stderr %s", code, out, errOut)
	}
	id := sessionIDFrom(t, errOut)
	body := srv.Requests()[0].Body
	if body["model"] != "gpt-4o-mini" {
		t.Fatalf("model %v", body["model"])
	}
	msgs := body["messages"].([]any)
	if sys := msgs[0].(map[string]any)["content"].(string); !strings.Contains(sys, "You are Hermes") {
		t.Fatalf("system prompt %q", sys)
	}
	var shown []schema.Message
	j, _, _ := hermes(t, chatEnv(srv), "", "--home", home, "sessions", "show", id, "--json")
	json.Unmarshal([]byte(j), &shown)
	if len(shown) != 3 || shown[1].Content != "Capital of France?" || shown[2].Content != "Paris." {
		t.Fatalf("show --json: %s", j)
	}
}

func TestChatConfigPrecedence(t *testing.T) {
	srv := llmtest.New()
	srv.SetDefault(llmtest.Reply{Content: "ok"})
	defer srv.Close()
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model:\n  default: from-file\n  provider: openai\nagent:\n  max_turns: 7\n"), 0o600)
	model := func(i int) string { return srv.Requests()[i].Body["model"].(string) }
	hermes(t, chatEnv(srv), "", "--home", home, "chat", "-q", "a")
	hermes(t, chatEnv(srv, "HERMES_MODEL=from-env"), "", "--home", home, "chat", "-q", "b")
	hermes(t, chatEnv(srv, "HERMES_MODEL=from-env"), "", "--home", home, "chat", "-q", "c", "--model", "from-flag")
	if model(0) != "from-file" || model(1) != "from-env" || model(2) != "from-flag" {
		t.Fatalf("models %s %s %s", model(0), model(1), model(2))
	}
	if got := srv.Requests()[0].Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Fatalf("key from the environment not used: %q", got)
	}

	empty := t.TempDir()
	_, errOut, code := hermes(t, chatEnv(srv), "", "--home", empty, "chat", "-q", "x")
	if code == 0 || !strings.Contains(errOut, "no model configured") || !strings.Contains(errOut, "--model") {
		t.Fatalf("no model: exit %d %s", code, errOut)
	}
	os.WriteFile(filepath.Join(empty, "config.yaml"), []byte("model: m\nagent:\n  budget_warning_at: 3\n"), 0o600)
	_, errOut, code = hermes(t, chatEnv(srv), "", "--home", empty, "chat", "-q", "x")
	if code == 0 || !strings.Contains(errOut, "agent.budget_warning_at") {
		t.Fatalf("bad key: exit %d %s", code, errOut)
	}
}

// TestKillMidTurnThenResume SIGKILLs hermes while the model is answering,
// then resumes the session: the dead turn is closed and the chat goes on.
func TestKillMidTurnThenResume(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "never arrives", Delay: 30 * time.Second}, llmtest.Reply{Content: "I am back."})
	defer srv.Close()
	home := t.TempDir()
	cmd := exec.Command(bin, "--home", home, "chat", "-q", "first question", "--model", "m")
	cmd.Env = chatEnv(srv)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	id := ""
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "session: "); ok {
			id = v
			break
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(srv.Requests()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if id == "" || len(srv.Requests()) == 0 {
		t.Fatal("hermes never reached the model")
	}
	out, errOut, code := hermes(t, chatEnv(srv), "", "--home", home, "chat", "--resume", id, "-q", "still there?", "--model", "m")
	if code != 0 || out != "I am back.\n" {
		t.Fatalf("resume: exit %d %q %s", code, out, errOut)
	}
	msgs := srv.Requests()[1].Body["messages"].([]any)
	if len(msgs) != 2 || !strings.Contains(msgs[1].(map[string]any)["content"].(string), "first question\n\nstill there?") {
		t.Fatalf("resumed request %v", msgs)
	}
	// show --json is exactly what that call sent (two user messages merged).
	var shown []map[string]any
	j, _, _ := hermes(t, chatEnv(srv), "", "--home", home, "sessions", "show", id, "--json")
	json.Unmarshal([]byte(j), &shown)
	if len(shown) != 3 || shown[1]["content"] != msgs[1].(map[string]any)["content"] || shown[2]["content"] != "I am back." {
		t.Fatalf("show --json %s", j)
	}
	store, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rs, _ := store.ReadStream(context.Background(), events.SessionStream(id), events.Forward, 0, 0)
	var types []string
	for _, r := range rs {
		types = append(types, r.Type)
	}
	if strings.Join(types, " ") != "SessionStarted SystemPromptBuilt UserMessageAdded TurnInterrupted UserMessageAdded AssistantMessageAdded TurnCompleted" {
		t.Fatalf("events %v", types)
	}
}

func TestChatSIGINTInterrupts(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "slow", Delay: 30 * time.Second}, llmtest.Reply{Content: "next"})
	defer srv.Close()
	home := t.TempDir()
	cmd := exec.Command(bin, "--home", home, "chat", "-q", "take long", "--model", "m")
	cmd.Env = chatEnv(srv)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.Start()
	deadline := time.Now().Add(20 * time.Second)
	for len(srv.Requests()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 130 || !strings.Contains(errb.String(), "interrupted by SIGINT") {
		t.Fatalf("exit %v stderr %s", err, errb.String())
	}
	// --continue picks that session up again.
	out, errOut, code := hermes(t, chatEnv(srv), "", "--home", home, "chat", "--continue", "-q", "go on", "--model", "m")
	if code != 0 || out != "next\n" || sessionIDFrom(t, errOut) != sessionIDFrom(t, errb.String()) {
		t.Fatalf("continue: %d %q %s", code, out, errOut)
	}
}

func TestChatInteractive(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "Hello, human.", Prompt: 10, Completion: 3}, llmtest.Reply{Content: "Second."})
	defer srv.Close()
	home := t.TempDir()
	out, errOut, code := hermes(t, chatEnv(srv), "hi\n/usage\n/model other-model\nagain\n/bogus\n/exit\n", "--home", home, "chat", "--model", "m")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "Hello, human.") || !strings.Contains(out, "Second.") {
		t.Fatalf("stdout %q", out)
	}
	if !strings.Contains(errOut, "1 model calls, prompt 10") || !strings.Contains(errOut, "unknown command /bogus") {
		t.Fatalf("stderr %s", errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[1].Body["model"] != "other-model" {
		t.Fatalf("/model not applied: %d requests", len(reqs))
	}
}

func TestChatFallbackProviders(t *testing.T) {
	fail := llmtest.Reply{Status: 503, ErrorBody: `{"error":{"message":"upstream unavailable"}}`}
	primary := llmtest.New(fail, fail, fail, fail)
	backup := llmtest.New(llmtest.Reply{Content: "answered by the backup"})
	defer primary.Close()
	defer backup.Close()
	home := t.TempDir()
	cfg := "model: main\nfallback_providers:\n  - provider: local-backup\n    base_url: " + backup.URL + "/v1\n    model: small-model\n"
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600)
	out, errOut, code := hermes(t, chatEnv(primary, "HERMES_BACKOFF_BASE=1ms"), "", "--home", home, "chat", "-q", "hi")
	if code != 0 || out != "answered by the backup\n" {
		t.Fatalf("%d %q %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "falling back to local-backup small-model") {
		t.Fatalf("no fallback status on stderr:\n%s", errOut)
	}
	if backup.Requests()[0].Body["model"] != "small-model" {
		t.Fatal("fallback model not used")
	}
	ev, _, _ := hermes(t, chatEnv(primary), "", "--home", home, "sessions", "events", sessionIDFrom(t, errOut))
	if !strings.Contains(ev, "ProviderFallback") {
		t.Fatalf("no ProviderFallback event:\n%s", ev)
	}
}

func TestCompressTreeLineageAndCosts(t *testing.T) {
	var script []llmtest.Reply
	for i := range 12 {
		script = append(script, llmtest.Reply{Content: fmt.Sprintf("answer %d %s", i, strings.Repeat("blah ", 100)), Prompt: 1000, Completion: 100})
	}
	// /compress: the memory flush call, the summary, then the next turn.
	script = append(script, llmtest.Reply{Content: "nothing to save"}, llmtest.Reply{Content: "## Goal\nchat about things"}, llmtest.Reply{Content: "after compression", Prompt: 500, Completion: 10})
	srv := llmtest.New(script...)
	defer srv.Close()
	home := t.TempDir()
	// Twelve turns would start a background memory review (memory.nudge_interval,
	// 10), whose model calls this script does not hold.
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("skills:\n  background_review: false\n"), 0o600)
	var in strings.Builder
	for i := range 12 {
		fmt.Fprintf(&in, "question %d %s\n", i, strings.Repeat("words ", 100))
	}
	in.WriteString("/compress\nfinal question\n/exit\n")
	out, errOut, code := hermes(t, chatEnv(srv, "HERMES_BACKOFF_BASE=1ms"), in.String(), "--home", home, "chat", "--model", "gpt-4o-mini")
	if code != 0 || !strings.Contains(out, "after compression") || !strings.Contains(errOut, "compressed: the conversation continues in session") {
		t.Fatalf("%d %q\n%s", code, out, errOut)
	}
	root := sessionIDFrom(t, errOut)
	tree := mustRun(t, home, "sessions", "tree", root)
	lines := strings.Split(strings.TrimSpace(tree), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], root) || !strings.Contains(lines[0], "[new] compressed") || !strings.Contains(lines[1], "└─ ") || !strings.Contains(lines[1], "[compression] active") {
		t.Fatalf("tree:\n%s", tree)
	}
	lin := mustRun(t, home, "sessions", "show", root[:8], "--lineage")
	if !strings.Contains(lin, "═══ 1/2 session "+root) || !strings.Contains(lin, "═══ 2/2") || !strings.Contains(lin, "CONTEXT SUMMARY") || !strings.Contains(lin, "final question") {
		t.Fatalf("lineage view:\n%.2000s", lin)
	}
	var rows []struct {
		Key   string  `json:"key"`
		Calls int     `json:"calls"`
		Cost  float64 `json:"cost_usd"`
	}
	json.Unmarshal([]byte(mustRun(t, home, "costs", "--by", "lineage", "--json")), &rows)
	// 13 conversation calls, plus the memory flush and the summary of /compress
	if len(rows) != 1 || rows[0].Key != root || rows[0].Calls != 15 || rows[0].Cost <= 0 {
		t.Fatalf("costs by lineage %+v", rows)
	}
	bySession := mustRun(t, home, "costs", "--by", "model")
	if !strings.Contains(bySession, "gpt-4o-mini") || !strings.Contains(bySession, "TOTAL") {
		t.Fatalf("costs by model:\n%s", bySession)
	}
	if _, errOut, err := run(t, home, "costs", "--by", "planet"); err == nil || !strings.Contains(errOut, "--by \"planet\"") {
		t.Fatalf("bad --by: %s", errOut)
	}
}

func TestDelegationFromTheCLI(t *testing.T) {
	srv := llmtest.New()
	srv.SetRoute(func(r llmtest.Request) *llmtest.Reply {
		msgs := r.Body["messages"].([]any)
		last := msgs[len(msgs)-1].(map[string]any)
		sys := msgs[0].(map[string]any)["content"].(string)
		switch {
		case strings.Contains(sys, "You are a subagent"):
			return &llmtest.Reply{Content: "the answer is 42", Prompt: 300, Completion: 5}
		case last["role"] == "user":
			return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "delegate_task", Args: `{"goal":"compute the answer","toolsets":["file"]}`}}, Prompt: 200, Completion: 20}
		}
		return &llmtest.Reply{Content: "My subagent says: " + last["content"].(string), Prompt: 400, Completion: 10}
	})
	defer srv.Close()
	home := t.TempDir()
	out, errOut, code := hermes(t, chatEnv(srv), "", "--home", home, "chat", "--model", "gpt-4o-mini", "-q", "what is the answer?")
	if code != 0 || !strings.Contains(out, "the answer is 42") {
		t.Fatalf("%d %q %s", code, out, errOut)
	}
	id := sessionIDFrom(t, errOut)
	// The child was offered only the file toolset (and no delegation).
	for _, r := range srv.Requests() {
		if strings.Contains(r.Body["messages"].([]any)[0].(map[string]any)["content"].(string), "You are a subagent") {
			if offers(r, "delegate_task") || offers(r, "terminal") || !offers(r, "read_file") {
				t.Fatalf("child tools not restricted: %s", r.Raw)
			}
		}
	}
	tree := mustRun(t, home, "sessions", "tree", id)
	if !strings.Contains(tree, "[subagent: compute the answer] active") || !strings.Contains(tree, "└─ ") {
		t.Fatalf("tree:\n%s", tree)
	}
	var rows []struct {
		Key   string `json:"key"`
		Calls int    `json:"calls"`
	}
	json.Unmarshal([]byte(mustRun(t, home, "costs", "--by", "lineage", "--json")), &rows)
	if len(rows) != 1 || rows[0].Key != id || rows[0].Calls != 3 {
		t.Fatalf("costs by lineage %+v", rows)
	}
}

func offers(r llmtest.Request, tool string) bool {
	tools, _ := r.Body["tools"].([]any)
	for _, t := range tools {
		if t.(map[string]any)["function"].(map[string]any)["name"] == tool {
			return true
		}
	}
	return false
}

func TestReplayForkExportImportCommands(t *testing.T) {
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "r1", Name: "read_file", Args: `{"path":"notes.txt"}`}}},
		llmtest.Reply{Content: "The notes say hello."},
		llmtest.Reply{Content: "branch answer"})
	defer srv.Close()
	home, wd := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(wd, "notes.txt"), []byte("hello"), 0o644)
	_, errOut, code := hermesIn(t, wd, chatEnv(srv), "", "--home", home, "chat", "--model", "m", "-q", "what do the notes say?")
	if code != 0 {
		t.Fatal(errOut)
	}
	id := sessionIDFrom(t, errOut)
	if out := mustRun(t, home, "sessions", "replay", id); !strings.Contains(out, "matches the record: 1 turns, 2 model calls") {
		t.Fatal(out)
	}
	exported := mustRun(t, home, "sessions", "export", id)
	other := t.TempDir()
	f := filepath.Join(t.TempDir(), "s.jsonl")
	os.WriteFile(f, []byte(exported), 0o600)
	if out := strings.TrimSpace(mustRun(t, other, "sessions", "import", f)); out != id {
		t.Fatalf("import printed %q", out)
	}
	a := mustRun(t, home, "sessions", "show", id, "--json")
	b := mustRun(t, other, "sessions", "show", id, "--json")
	if a != b {
		t.Fatal("history differs after export and import")
	}
	// Tamper with the export: replay in the other home names the event.
	tampered := strings.Replace(exported, `notes.txt`, `secrets.txt`, 1)
	os.WriteFile(f, []byte(tampered), 0o600)
	mustRun(t, other, "sessions", "import", f, "--id", "tampered-1")
	if _, errOut, err := run(t, other, "sessions", "replay", "tampered-1"); err == nil || !strings.Contains(errOut, "replay diverges at event") {
		t.Fatalf("tampered replay: %v %s", err, errOut)
	}
	fork := strings.TrimSpace(mustRun(t, home, "sessions", "fork", id, "--at", "2"))
	var msgs []map[string]any
	json.Unmarshal([]byte(mustRun(t, home, "sessions", "show", fork, "--json")), &msgs)
	if len(msgs) != 2 || msgs[1]["content"] != "what do the notes say?" {
		t.Fatalf("fork history %v", msgs)
	}
	out, errOut, code := hermes(t, chatEnv(srv), "", "--home", home, "chat", "--resume", fork, "-q", "and on the branch?", "--model", "m")
	if code != 0 || out != "branch answer\n" {
		t.Fatalf("%d %q %s", code, out, errOut)
	}
	if tree := mustRun(t, home, "sessions", "tree", id); !strings.Contains(tree, "[fork]") {
		t.Fatalf("tree:\n%s", tree)
	}
}

func TestSearchCommand(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "Use kubectl rollout restart for the payments_service deployment."}, llmtest.Reply{Content: "Pasta needs salted water."})
	defer srv.Close()
	home := t.TempDir()
	_, errOut, _ := hermes(t, chatEnv(srv), "", "--home", home, "chat", "--model", "m", "-q", "how do I restart the payments service?")
	first := sessionIDFrom(t, errOut)
	hermes(t, chatEnv(srv), "", "--home", home, "chat", "--model", "m", "-q", "cooking tips?", "--source", "telegram")
	var res struct {
		Total uint64 `json:"total"`
		Hits  []struct {
			Session string `json:"session"`
			Snippet string `json:"snippet"`
		} `json:"hits"`
		Facets map[string]map[string]int `json:"facets"`
	}
	json.Unmarshal([]byte(mustRun(t, home, "search", "payments", "--json")), &res)
	if len(res.Hits) != 1 || res.Hits[0].Session != first || res.Total != 2 {
		t.Fatalf("search payments: %+v", res)
	}
	if s := res.Hits[0].Snippet; !strings.Contains(s, "<mark>payments</mark>_service") {
		t.Fatalf("JSON snippet of a match inside an identifier %q", s)
	}
	json.Unmarshal([]byte(mustRun(t, home, "search", "rollout", "--json")), &res)
	if len(res.Hits) != 1 || !strings.Contains(res.Hits[0].Snippet, "<mark>rollout</mark>") || strings.Contains(res.Hits[0].Snippet, "\x1b") {
		t.Fatalf("JSON snippet %+v", res.Hits)
	}
	json.Unmarshal([]byte(mustRun(t, home, "search", "water", "--source", "cli", "--json")), &res)
	if len(res.Hits) != 0 {
		t.Fatalf("source filter: %+v", res)
	}
	res.Hits = nil
	json.Unmarshal([]byte(mustRun(t, home, "search", "payments", "--until", "2000-01-01", "--json")), &res)
	if len(res.Hits) != 0 {
		t.Fatalf("--until filter: %+v", res)
	}
	today := time.Now().UTC().Format("2006-01-02")
	json.Unmarshal([]byte(mustRun(t, home, "search", "payments", "--since", today, "--until", today, "--json")), &res)
	if len(res.Hits) != 1 {
		t.Fatalf("--since/--until today: %+v", res)
	}
	if _, errOut, err := run(t, home, "search", "payments", "--until", "yesterday"); err == nil || !strings.Contains(errOut, "YYYY-MM-DD") {
		t.Fatalf("bad --until accepted: %v %s", err, errOut)
	}
	text := mustRun(t, home, "search", "restart", "--rebuild")
	if !strings.Contains(text, first) || !strings.Contains(text, "by source: cli 2") || strings.Contains(text, "\x1b") {
		t.Fatalf("text output:\n%s", text)
	}
	mustRun(t, home, "sessions", "delete", first)
	if out := mustRun(t, home, "search", "payments"); !strings.Contains(out, "no matches") {
		t.Fatalf("deleted session still found:\n%s", out)
	}
}

func TestSessionSearchTool(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "The wifi password is in the blue notebook."},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "s", Name: "session_search", Args: `{"query":"notebook"}`}}},
		llmtest.Reply{Content: "You wrote it down in the blue notebook."})
	defer srv.Close()
	home := t.TempDir()
	_, errOut, _ := hermes(t, chatEnv(srv), "", "--home", home, "chat", "--model", "m", "-q", "where is the wifi password?")
	first := sessionIDFrom(t, errOut)
	out, errOut, code := hermes(t, chatEnv(srv), "", "--home", home, "chat", "--model", "m", "-q", "remind me where that password was?")
	if code != 0 || !strings.Contains(out, "blue notebook") {
		t.Fatalf("%d %q %s", code, out, errOut)
	}
	msgs := srv.Requests()[2].Body["messages"].([]any)
	res := msgs[len(msgs)-1].(map[string]any)["content"].(string)
	if !strings.Contains(res, first) || !strings.Contains(res, "notebook") {
		t.Fatalf("tool result %q", res)
	}
}

func TestLongSessionSearchResultsAreSummarised(t *testing.T) {
	srv := llmtest.New()
	var asked atomic.Int32
	srv.SetRoute(func(r llmtest.Request) *llmtest.Reply {
		msgs := r.Body["messages"].([]any)
		sys := msgs[0].(map[string]any)["content"].(string)
		last := msgs[len(msgs)-1].(map[string]any)
		content, _ := last["content"].(string)
		switch {
		case strings.Contains(sys, "You condense search results"):
			return &llmtest.Reply{Content: "Many sessions discussed the kafka migration; see session ids in the index.", Prompt: 4000, Completion: 60}
		case last["role"] == "tool":
			return &llmtest.Reply{Content: "From memory: " + content}
		case strings.HasPrefix(content, "search please"):
			asked.Add(1)
			return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "q", Name: "session_search", Args: `{"query":"kafka","limit":20}`}}}
		}
		return &llmtest.Reply{Content: "kafka migration notes " + strings.Repeat("partition rebalancing consumer lag ", 20)}
	})
	defer srv.Close()
	home := t.TempDir()
	for i := range 12 {
		hermes(t, chatEnv(srv), "", "--home", home, "chat", "--model", "m", "-q", fmt.Sprintf("kafka question %d about %s", i, strings.Repeat("the kafka cluster migration plan ", 12)))
	}
	out, errOut, code := hermes(t, chatEnv(srv), "", "--home", home, "chat", "--model", "m", "-q", "search please")
	if code != 0 || !strings.Contains(out, "From memory: Summary of") || !strings.Contains(out, "kafka migration") || asked.Load() != 1 {
		t.Fatalf("%d %q %s", code, out, errOut)
	}
	// the condensing call is the session's, with its usage
	s, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rs, _ := s.ReadStream(context.Background(), events.SessionStream(sessionIDFrom(t, errOut)), events.Forward, 0, 0)
	var aux []string
	for _, r := range rs {
		if r.Type == "AuxiliaryCallCompleted" {
			aux = append(aux, string(r.Payload))
		}
	}
	if len(aux) != 1 || !strings.Contains(aux[0], `"purpose":"search_summary"`) || !strings.Contains(aux[0], `"prompt_tokens":4000`) {
		t.Fatalf("auxiliary calls recorded: %v", aux)
	}
	// and the session still replays: the call is not a decision of the loop
	if out, errOut, code := hermes(t, chatEnv(srv), "", "--home", home, "sessions", "replay", sessionIDFrom(t, errOut)); code != 0 {
		t.Fatalf("replay: %d %s %s", code, out, errOut)
	}
}

// TestChatLongInputLines: a 2 MiB line (a pasted file) is a message like
// any other, a line over the limit is refused with a message, and either
// way the chat goes on with the next line.
func TestChatLongInputLines(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "got the long one"}, llmtest.Reply{Content: "got the short one"})
	defer srv.Close()
	home := t.TempDir()
	long := strings.Repeat("x", 2<<20)
	huge := strings.Repeat("y", 17<<20)
	in := long + "\n" + huge + "\r\nshort line\n/exit\n"
	out, errOut, code := hermes(t, chatEnv(srv), in, "--home", home, "chat", "--model", "m")
	if code != 0 || !strings.Contains(out, "got the long one") || !strings.Contains(out, "got the short one") {
		t.Fatalf("exit %d stdout %q stderr %.2000s", code, out, errOut)
	}
	if !strings.Contains(errOut, "an input line over 16 MiB was not sent") {
		t.Fatalf("the refused line is not said:\n%.2000s", errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	last := func(i int) string {
		msgs := reqs[i].Body["messages"].([]any)
		return msgs[len(msgs)-1].(map[string]any)["content"].(string)
	}
	if last(0) != long || last(1) != "short line" {
		t.Fatalf("sent %d bytes, then %.100q", len(last(0)), last(1))
	}
}

// TestChatBrokenStreams: a server that cuts every answer mid-stream (one
// chunk of text, then the connection closes without finish_reason or
// [DONE]) makes `chat -q` fail with a message naming the cut, after the
// ladder's retries, and nothing truncated is printed or recorded as an
// answer; a server that keeps the stream alive without ever finishing it
// is stopped by agent.model_call_timeout.
func TestChatBrokenStreams(t *testing.T) {
	t.Run("always cut", func(t *testing.T) {
		srv := llmtest.New()
		srv.SetDefault(llmtest.Reply{Content: "The capital of France is Paris.", CutAfter: 2})
		defer srv.Close()
		home := t.TempDir()
		out, errOut, code := hermes(t, chatEnv(srv, "HERMES_BACKOFF_BASE=1ms"), "", "--home", home, "chat", "-q", "Capital of France?", "--model", "m")
		if code == 0 || out != "" {
			t.Fatalf("exit %d stdout %q stderr %s", code, out, errOut)
		}
		if !strings.Contains(errOut, "stream was cut") || !strings.Contains(errOut, "stream_cut") {
			t.Fatalf("stderr does not name the cut stream:\n%s", errOut)
		}
		if n := len(srv.Requests()); n != 4 {
			t.Fatalf("%d model calls, want 1 + 3 retries", n)
		}
		evs, _, _ := hermes(t, chatEnv(srv), "", "--home", home, "sessions", "show", sessionIDFrom(t, errOut), "--json")
		if strings.Contains(evs, "The capital") {
			t.Fatalf("the cut answer was recorded: %s", evs)
		}
	})
	t.Run("endless", func(t *testing.T) {
		srv := llmtest.New()
		srv.SetDefault(llmtest.Reply{TrickleEvery: 20 * time.Millisecond})
		defer srv.Close()
		home := t.TempDir()
		os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: m\nagent:\n  model_call_timeout: 500ms\n"), 0o600)
		start := time.Now()
		_, errOut, code := hermes(t, chatEnv(srv), "", "--home", home, "chat", "-q", "hi")
		if code == 0 || !strings.Contains(errOut, "call_timeout") || !strings.Contains(errOut, "agent.model_call_timeout") || time.Since(start) > 10*time.Second {
			t.Fatalf("exit %d after %s, stderr %s", code, time.Since(start), errOut)
		}
		os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: m\nagent:\n  model_call_timeout: soon\n"), 0o600)
		if _, errOut, code = hermes(t, chatEnv(srv), "", "--home", home, "chat", "-q", "hi"); code == 0 || !strings.Contains(errOut, "agent.model_call_timeout") {
			t.Fatalf("bad value: exit %d %s", code, errOut)
		}
	})
}

// silentListener accepts connections and never sends a byte: a model
// server that is stuck, or a port something else holds.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
			go io.Copy(io.Discard, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for {
			select {
			case c := <-conns:
				c.Close()
			default:
				return
			}
		}
	})
	return ln.Addr().String()
}

// A model server that accepts the connection and never answers: chat -q
// and plain chat say early that it has not answered yet, and fail the turn
// after agent.first_byte_timeout (here from HERMES_FIRST_BYTE_TIMEOUT)
// naming the server, instead of 60 s of silence and an error after 337.
func TestChatServerThatNeverAnswers(t *testing.T) {
	host := silentListener(t)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "OPENAI_BASE_URL=http://" + host + "/v1", "OPENAI_API_KEY=sk-test"}
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: m\nagent:\n  first_byte_timeout: 2\n"), 0o600)
	start := time.Now()
	_, errOut, code := hermes(t, env, "", "--home", home, "chat", "-q", "hi")
	took := time.Since(start)
	if code == 0 || took > 15*time.Second || !strings.Contains(errOut, "no answer from "+host+" in 2s") || !strings.Contains(errOut, "agent.first_byte_timeout") {
		t.Fatalf("exit %d after %s, stderr %s", code, took, errOut)
	}
	notice := strings.Index(errOut, "… no answer from "+host+" yet (")
	if notice < 0 || notice > strings.Index(errOut, "turn failed") {
		t.Fatalf("no early notice before the error:\n%s", errOut)
	}
	// Plain chat, lines from a pipe, the environment over config.yaml.
	start = time.Now()
	_, errOut, _ = hermes(t, append(env, "HERMES_FIRST_BYTE_TIMEOUT=1"), "hi\n", "--home", home, "chat")
	if took := time.Since(start); took > 15*time.Second || !strings.Contains(errOut, "… no answer from "+host+" yet (") || !strings.Contains(errOut, "no answer from "+host+" in 1s") {
		t.Fatalf("plain chat after %s: %s", took, errOut)
	}
}

// In plain mode the chat follows the conversation into the session that
// /compress continues it in: /usage counts both, and the next turn is
// sent to the new session.
func TestPlainChatFollowsCompression(t *testing.T) {
	srv := llmtest.New()
	srv.SetRoute(func(r llmtest.Request) *llmtest.Reply {
		switch lastUser(r) {
		case "hi":
			return &llmtest.Reply{Content: "Hello, human.", Prompt: 10, Completion: 3}
		case "how are you":
			return &llmtest.Reply{Content: "Fine, thanks.", Prompt: 10, Completion: 3}
		case "again":
			return &llmtest.Reply{Content: "Second.", Prompt: 12, Completion: 2}
		}
		return &llmtest.Reply{Content: "The person greeted the assistant.", Prompt: 30, Completion: 6}
	})
	defer srv.Close()
	home := t.TempDir()
	out, errOut, code := hermes(t, chatEnv(srv), "hi\nhow are you\n/compress --force\n/usage\nagain\n/exit\n", "--home", home, "chat", "--model", "m")
	if code != 0 || !strings.Contains(out, "Second.") {
		t.Fatalf("exit %d: %q\n%s", code, out, errOut)
	}
	_, after, ok := strings.Cut(errOut, "compressed: the conversation continues in session ")
	if !ok {
		t.Fatalf("no compression:\n%s", errOut)
	}
	child := strings.Fields(after)[0]
	if !strings.Contains(errOut, "session "+child+": 4 model calls over 2 sessions") {
		t.Fatalf("/usage does not follow the compression into %s:\n%s", child, errOut)
	}
	ev, _, _ := hermes(t, chatEnv(srv), "", "--home", home, "sessions", "events", child)
	if !strings.Contains(ev, "again") || !strings.Contains(ev, "Second.") {
		t.Fatalf("the turn after /compress is not in %s:\n%s", child, ev)
	}
}

// Piped chat (lines from a pipe, no -q) treats a command that needs an
// approval as chat -q does: standard input has ended, so nobody can
// answer, the command is denied, the model hears the denial as the tool's
// result, and the turn goes on to its answer. (The turn used to be
// stopped without a word when the input ended, exit 0, no answer.)
func TestPipedChatDenialReachesTheModel(t *testing.T) {
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "t1", Name: "terminal", Args: `{"command":"rm -rf build"}`}}},
		llmtest.Reply{Content: "Not allowed, so I left build alone."},
	)
	defer srv.Close()
	home, wd := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(wd, "build"), 0o755)
	out, errOut, code := hermesIn(t, wd, chatEnv(srv), "clean the build\n", "--home", home, "chat", "--model", "m")
	if code != 0 || out != "Not allowed, so I left build alone.\n" || !strings.Contains(errOut, "standard input is not a terminal and has ended") {
		t.Fatalf("piped chat: %d %q\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(wd, "build")); err != nil {
		t.Fatal("a command ran without approval")
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2 (the denial goes back to the model)", len(reqs))
	}
	msgs, _ := reqs[1].Body["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	if content, _ := last["content"].(string); last["role"] != "tool" || !strings.Contains(content, "denied") || !strings.Contains(content, "nobody can be asked") {
		t.Fatalf("the model was told %v", last)
	}
}
