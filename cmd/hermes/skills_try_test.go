package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// `hermes skills try` on a past session: the session is forked before its
// first message and its messages sent again to the (scripted, live)
// model, whose skill_view now reads the version tried; the old and new
// turns are shown side by side, the fork is a session of its own with the
// original as parent, and the library's skill is untouched.
func TestSkillsTryOnThePast(t *testing.T) {
	srv := llmtest.New()
	defer srv.Close()
	// The model reads the skill, then answers with the step it found.
	srv.Route = func(r llmtest.Request) *llmtest.Reply {
		msgs, _ := r.Body["messages"].([]any)
		last, _ := msgs[len(msgs)-1].(map[string]any)
		if _, tools := r.Body["tools"]; !tools {
			return &llmtest.Reply{Content: "a title"}
		}
		if last["role"] != "tool" {
			return &llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "v1", Name: "skill_view", Args: `{"name":"deploy"}`}}}
		}
		content, _ := last["content"].(string)
		switch {
		case strings.Contains(content, "NEW STEP"):
			return &llmtest.Reply{Content: "Deploying with the NEW STEP."}
		case strings.Contains(content, "OLD STEP"):
			return &llmtest.Reply{Content: "Deploying with the OLD STEP."}
		}
		return &llmtest.Reply{Content: "no skill"}
	}
	home := t.TempDir()
	writeConfig(t, home, "model: gpt-4o-mini\n")
	lib := filepath.Join(home, "skills", "deploy")
	os.MkdirAll(lib, 0o755)
	old := "---\nname: deploy\ndescription: how to deploy\n---\nRun the OLD STEP.\n"
	if err := os.WriteFile(filepath.Join(lib, "SKILL.md"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	env := chatEnv(srv)
	out, errOut, code := hermes(t, env, "", "--home", home, "chat", "-q", "deploy the app")
	if code != 0 || !strings.Contains(out, "OLD STEP") {
		t.Fatalf("the original session: exit %d %q\n%s", code, out, errOut)
	}
	id := sessionIDFrom(t, errOut)

	cand := filepath.Join(t.TempDir(), "SKILL.md")
	os.WriteFile(cand, []byte("---\nname: deploy\ndescription: how to deploy\n---\nRun the NEW STEP.\n"), 0o644)
	out, errOut, code = hermes(t, env, "", "--home", home, "skills", "try", "deploy", "--file", cand, "--on", id[:8], "--json")
	if code != 0 {
		t.Fatalf("skills try: exit %d\n%s\n%s", code, out, errOut)
	}
	var res []tryResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 1 {
		t.Fatalf("%v: %s", err, out)
	}
	r := res[0]
	if r.Session != id || len(r.Before) != 1 || len(r.After) != 1 || r.Before[0].Message != "deploy the app" {
		t.Fatalf("%+v", r)
	}
	if r.Before[0].Answer != "Deploying with the OLD STEP." || r.After[0].Answer != "Deploying with the NEW STEP." ||
		strings.Join(r.After[0].Tools, ",") != "skill_view" {
		t.Fatalf("before %+v, after %+v", r.Before[0], r.After[0])
	}
	if got, _ := os.ReadFile(filepath.Join(lib, "SKILL.md")); string(got) != old {
		t.Fatalf("the library's skill changed:\n%s", got)
	}
	if show := mustRun(t, home, "sessions", "show", r.Fork); !strings.Contains(show, id) {
		t.Fatalf("the fork does not name its parent:\n%s", show)
	}

	// The text form shows both turns and the change.
	out, errOut, code = hermes(t, env, "", "--home", home, "skills", "try", "deploy", "--file", cand, "--on", id)
	if code != 0 {
		t.Fatalf("skills try: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"> deploy the app", "before: tools [skill_view]", "-Deploying with the OLD STEP.", "+Deploying with the NEW STEP."} {
		if !strings.Contains(out, want) {
			t.Fatalf("missing %q in:\n%s", want, out)
		}
	}
	// A file that is another skill, or no session, is refused.
	other := filepath.Join(t.TempDir(), "SKILL.md")
	os.WriteFile(other, []byte("---\nname: other\ndescription: x\n---\nbody\n"), 0o644)
	if _, errOut, code := hermes(t, env, "", "--home", home, "skills", "try", "deploy", "--file", other, "--on", id); code == 0 || !strings.Contains(errOut, `is skill "other", not "deploy"`) {
		t.Fatalf("another skill's file: %d %s", code, errOut)
	}
	if _, errOut, code := hermes(t, env, "", "--home", home, "skills", "try", "deploy", "--file", cand, "--on", "nosuchsession"); code == 0 || !strings.Contains(errOut, "no session") {
		t.Fatalf("an unknown session: %d %s", code, errOut)
	}
}
