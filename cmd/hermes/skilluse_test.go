package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/command"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

func systemPrompt(r llmtest.Request) string {
	s, _ := r.Body["messages"].([]any)[0].(map[string]any)["content"].(string)
	return s
}

func putSkill(t *testing.T, home, rel, text string) {
	t.Helper()
	dir := filepath.Join(home, "skills", filepath.FromSlash(rel))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSlashSkillInPlainChat runs the binary's plain chat: /<skill-name>
// loads the skill into the turn (with its settings from config.yaml and
// the instruction typed after it), a bundle loads its skills, a skill for
// another operating system is refused with the reason and left out of the
// system prompt, an unknown name is an unknown command; the loads are
// recorded, and the curator and insights count them.
func TestSlashSkillInPlainChat(t *testing.T) {
	srv := llmtest.New()
	srv.SetDefault(llmtest.Reply{Content: "done"})
	defer srv.Close()
	home := t.TempDir()
	putSkill(t, home, "devops/deploy-check", "---\nname: deploy-check\ndescription: Check a deploy\nmetadata:\n  hermes:\n    config:\n      - key: deploy.target\n        description: Where deploys go\n        default: staging\n---\nRun the smoke tests against the target.\n")
	putSkill(t, home, "notes", "---\nname: notes\ndescription: Take notes\n---\nWrite notes in NOTES.md.\n")
	putSkill(t, home, "elsewhere", "---\nname: elsewhere\ndescription: Only on another system\nplatforms: [windows, macos]\n---\nUse the other system.\n")
	os.MkdirAll(filepath.Join(home, "skill-bundles"), 0o755)
	os.WriteFile(filepath.Join(home, "skill-bundles", "ship.yaml"), []byte("name: ship\nskills: [deploy-check, notes]\ninstruction: Ship it carefully.\n"), 0o644)
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: m\nskills:\n  config:\n    deploy:\n      target: production\n"), 0o600)

	stdin := "/deploy-check the api\n/elsewhere\n/no-such-skill\n/ship now\n/bundles\n"
	_, errOut, code := hermes(t, chatEnv(srv), stdin, "--home", home, "chat")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2 (the refused and unknown ones call nothing)\n%s", len(reqs), errOut)
	}
	first := lastUser(reqs[0])
	for _, want := range []string{`invoked the "deploy-check" skill`, "Run the smoke tests against the target.", "deploy.target = production",
		"instruction alongside the skill invocation: the api"} {
		if !strings.Contains(first, want) {
			t.Errorf("the turn's message lacks %q:\n%s", want, first)
		}
	}
	if sys := systemPrompt(reqs[0]); !strings.Contains(sys, "deploy-check") || strings.Contains(sys, "elsewhere") {
		t.Errorf("the index should list deploy-check and not the skill for another system:\n%s", sys)
	}
	bundle := lastUser(reqs[1])
	if !strings.Contains(bundle, `"ship" skill bundle`) || !strings.Contains(bundle, "Write notes in NOTES.md.") || !strings.Contains(bundle, "User instruction: now") {
		t.Errorf("bundle message:\n%s", bundle)
	}
	for _, want := range []string{"loaded skill deploy-check into this turn", "skill elsewhere is not offered here: it is for windows, macos",
		"unknown command /no-such-skill", "loaded bundle ship (deploy-check, notes)", "/ship — deploy-check, notes"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}

	status := mustRun(t, home, "curator", "status")
	uses := map[string]string{}
	for _, l := range strings.Split(status, "\n") {
		if f := strings.Fields(l); len(f) >= 3 {
			uses[f[0]] = f[2]
		}
	}
	if uses["deploy-check"] != "2" || uses["notes"] != "1" || uses["elsewhere"] != "0" {
		t.Fatalf("curator status counts %v:\n%s", uses, status)
	}
	out := mustRun(t, home, "insights")
	if !strings.Contains(out, "skills used    3: deploy-check 2, notes 1") {
		t.Errorf("insights:\n%s", out)
	}
}

// toolResult is the content of the last tool message of a model request.
func toolResult(r llmtest.Request) string {
	msgs := r.Body["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i].(map[string]any); m["role"] == "tool" {
			s, _ := m["content"].(string)
			return s
		}
	}
	return ""
}

// TestMemoryGateResetOff runs the binary: with memory.write_approval on,
// what the agent wants to remember waits until /memory approves it;
// hermes memory reset empties the memory (as events) and reset --undo
// puts it back; hermes memory off makes the tool refuse, and new sessions
// recall nothing.
func TestMemoryGateResetOff(t *testing.T) {
	srv := llmtest.New()
	defer srv.Close()
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: m\nmemory:\n  write_approval: true\n"), 0o600)
	userMD := filepath.Join(home, "memories", "USER.md")
	remember := llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_mem", Name: "memory", Args: `{"action":"add","target":"user","content":"Likes tea"}`}}}

	srv.Add(remember, llmtest.Reply{Content: "noted"})
	if _, errOut, code := hermes(t, chatEnv(srv), "", "--home", home, "chat", "-q", "I like tea"); code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if got := toolResult(srv.Requests()[1]); !strings.Contains(got, "staged for the user's approval") {
		t.Fatalf("tool result %q", got)
	}
	if _, err := os.Stat(userMD); !os.IsNotExist(err) {
		t.Fatal("a staged change reached USER.md")
	}
	status := mustRun(t, home, "memory", "status")
	if !strings.Contains(status, "review gate on") || !strings.Contains(status, "1 memory change(s) wait for review") || !strings.Contains(status, "add to user profile: Likes tea") {
		t.Fatalf("status:\n%s", status)
	}

	_, errOut, code := hermes(t, chatEnv(srv), "/memory approve m-nope\n/memory approve all\n", "--home", home, "chat")
	if code != 0 || !strings.Contains(errOut, "no memory change m-nope waits for review") || !strings.Contains(errOut, "approved: USER.md: add done") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if b, _ := os.ReadFile(userMD); string(b) != "Likes tea\n" {
		t.Fatalf("USER.md %q", b)
	}
	if out := mustRun(t, home, "insights"); !strings.Contains(out, "memories       1 added") || !strings.Contains(out, "+ Likes tea") {
		t.Errorf("insights:\n%s", out)
	}

	if _, _, err := run(t, home, "memory", "reset"); err == nil {
		t.Fatal("reset without a terminal to ask nor --yes went ahead")
	}
	if out := mustRun(t, home, "memory", "reset", "--yes"); !strings.Contains(out, "reset USER.md: 1 entries removed") {
		t.Fatalf("reset: %s", out)
	}
	if b, _ := os.ReadFile(userMD); len(b) != 0 {
		t.Fatalf("USER.md after reset %q", b)
	}
	if out := mustRun(t, home, "memory", "reset", "--undo"); !strings.Contains(out, "restored 1 entries of USER.md") {
		t.Fatalf("undo: %s", out)
	}
	if b, _ := os.ReadFile(userMD); string(b) != "Likes tea\n" {
		t.Fatalf("USER.md after undo %q", b)
	}
	srv.Add(llmtest.Reply{Content: "hello"})
	hermes(t, chatEnv(srv), "", "--home", home, "chat", "-q", "hi")
	if sys := systemPrompt(srv.Requests()[2]); !strings.Contains(sys, "Likes tea") {
		t.Fatalf("memory on: the prompt should recall it:\n%s", sys)
	}

	mustRun(t, home, "memory", "off")
	srv.Add(remember, llmtest.Reply{Content: "ok"})
	hermes(t, chatEnv(srv), "", "--home", home, "chat", "-q", "I like coffee too")
	reqs := srv.Requests()
	if sys := systemPrompt(reqs[3]); strings.Contains(sys, "Likes tea") {
		t.Fatalf("memory off: the prompt still recalls it:\n%s", sys)
	}
	if got := toolResult(reqs[4]); !strings.Contains(got, "memory is off") {
		t.Fatalf("memory off: tool result %q", got)
	}
	if out := mustRun(t, home, "memory", "status"); !strings.Contains(out, "memory off") || !strings.Contains(out, "no memory changes wait") {
		t.Fatalf("status after off:\n%s", out)
	}
}

// TestScreenSlashSkillAndMemory drives the chat screen in a tmux pane:
// /<skill-name> loads the skill into the turn (the model gets its
// instructions, the screen says what was loaded), a skill for another
// system is refused with the reason, and /memory shows the memory's
// state.
func TestScreenSlashSkillAndMemory(t *testing.T) {
	srv := llmtest.New()
	srv.SetDefault(llmtest.Reply{Content: "Smoke tests pass."})
	defer srv.Close()
	home, wd := t.TempDir(), t.TempDir()
	putSkill(t, home, "deploy-check", "---\nname: deploy-check\ndescription: Check a deploy\n---\nRun the smoke tests against staging.\n")
	putSkill(t, home, "elsewhere", "---\nname: elsewhere\ndescription: Only on another system\nplatforms: [windows]\n---\nUse the other system.\n")
	p := newPane(t, wd, screenEnv(srv), 110, 45, fmt.Sprintf("%s --home %s -m m; sleep 60", bin, home))
	p.waitText("/help lists the commands")
	p.waitFor("the empty editor", func(s string) bool { return strings.Contains(editor(s), "Message Hermes") })
	typed := func(line string) {
		p.text(line)
		p.waitFor(fmt.Sprintf("%q typed", line), func(s string) bool { return strings.HasPrefix(editor(s), "› "+line) })
		p.keys("Enter")
	}
	typed("/deploy-check the api")
	p.waitText("loaded skill deploy-check into this turn")
	p.waitText("Smoke tests pass.")
	if u := lastUser(srv.Requests()[0]); !strings.Contains(u, "Run the smoke tests against staging.") || !strings.Contains(u, "alongside the skill invocation: the api") {
		t.Fatalf("the model got %q", u)
	}
	typed("/elsewhere")
	p.waitText("skill elsewhere is not offered here: it is for windows")
	typed("/memory")
	p.waitText("USER.md: 0 entries, 0/1375 characters")
	typed("/skills")
	p.waitText("elsewhere — Only on another system (not offered here: it is for windows")
	for _, r := range srv.Requests() {
		if strings.Contains(lastUser(r), "Use the other system") {
			t.Fatalf("the refused skill reached the model: %q", lastUser(r))
		}
	}
}

// TestGatewayInfo: the gateway's /tools names the tools, /skills lists the
// skills offered on the chat's platform (one disabled there is left out),
// /bundles the bundles.
func TestGatewayInfo(t *testing.T) {
	home := t.TempDir()
	putSkill(t, home, "devops/deploy-check", "---\nname: deploy-check\ndescription: Check a deploy\n---\nRun the smoke tests.\n")
	putSkill(t, home, "notes", "---\nname: notes\ndescription: Take notes\n---\nWrite notes.\n")
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: m\nskills:\n  platform_disabled:\n    irc: [notes]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &chatter{Chat: &app.Chat{App: &app.App{Home: home}, WD: t.TempDir(), Tools: []string{"terminal", "skill_view"}}}
	ctx := context.Background()
	if got, err := c.gatewayInfo(ctx, "telegram", command.Tools, ""); err != nil || got != "2 tools: terminal, skill_view" {
		t.Fatalf("/tools: %q %v", got, err)
	}
	got, err := c.gatewayInfo(ctx, "telegram", command.Skills, "")
	if err != nil || !strings.HasPrefix(got, "2 skills (/NAME loads one into a turn):") || !strings.Contains(got, "\ndevops/deploy-check — Check a deploy") ||
		!strings.Contains(got, "\nnotes — Take notes") {
		t.Fatalf("/skills on telegram: %q %v", got, err)
	}
	if got, err := c.gatewayInfo(ctx, "irc", command.Skills, ""); err != nil || strings.Contains(got, "notes") || !strings.HasPrefix(got, "1 skills") {
		t.Fatalf("/skills on irc, where notes is disabled: %q %v", got, err)
	}
	if got, err := c.gatewayInfo(ctx, "telegram", command.Bundles, ""); err != nil || !strings.HasPrefix(got, "no skill bundles") {
		t.Fatalf("/bundles: %q %v", got, err)
	}
}
