package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

const curatedSteps = "1. Run the full test suite with the race detector.\n2. Update the CHANGELOG with every user-facing change.\n3. Tag the release vX.Y.Z and push the tag.\n"

func curatedSkill(name, desc, body string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\n\n" + body
}

// TestCuratorThroughTheBinary: a session's skill_view calls are the
// usage the curator reads; a run archives the unused duplicate (an event
// by the run), leaves a pinned duplicate alone, and rollback restores the
// archived skill; the same run is scheduled through cron.
func TestCuratorThroughTheBinary(t *testing.T) {
	home := t.TempDir()
	manageSkills(t, home, "s1",
		map[string]any{"action": "create", "name": "release-checklist", "content": curatedSkill("release-checklist", "Cut a release", curatedSteps)},
		map[string]any{"action": "create", "name": "release-steps", "content": curatedSkill("release-steps", "Cut a release", curatedSteps)},
		map[string]any{"action": "create", "name": "deploy-check", "content": curatedSkill("deploy-check", "Check a deploy", "Run the smoke tests against staging, then production.\n")},
		map[string]any{"action": "create", "name": "deploy-verify", "content": curatedSkill("deploy-verify", "Check a deploy", "Run the smoke tests against staging, then production.\n")},
	)
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "skill_view", Args: `{"name":"release-checklist"}`}, {Name: "skill_view", Args: `{"name":"deploy-check"}`}}},
		llmtest.Reply{Content: "Done."},
	)
	defer srv.Close()
	env := chatEnv(srv, "HERMES_MODEL=test-model")
	h := func(args ...string) (string, string, int) {
		t.Helper()
		return hermes(t, env, "", append([]string{"--home", home}, args...)...)
	}
	must := func(args ...string) string {
		t.Helper()
		out, errOut, code := h(args...)
		if code != 0 {
			t.Fatalf("hermes %v: exit %d\n%s\n%s", args, code, out, errOut)
		}
		return out
	}
	must("chat", "-q", "release and deploy")
	must("skills", "pin", "deploy-verify")
	if _, _, code := h("skills", "pin", "no-such-skill"); code == 0 {
		t.Fatal("pinned a skill that does not exist")
	}

	status := must("curator", "status")
	for _, re := range []string{`release-checklist\s+v1\s+1\s+\d{4}-`, `release-steps\s+v1\s+0\s+never`, `deploy-verify\s+v1\s+0\s+never\s+yes`, `archive release-steps: duplicate of release-checklist`} {
		if !regexp.MustCompile(re).MatchString(status) {
			t.Fatalf("status lacks %s:\n%s", re, status)
		}
	}

	// Without a terminal or --yes: proposed, not done.
	out, errOut, code := h("curator", "run")
	if code == 0 || !strings.Contains(out, "archive release-steps") || !strings.Contains(errOut, "--yes") {
		t.Fatalf("run without --yes: exit %d\n%s\n%s", code, out, errOut)
	}
	steps := filepath.Join(home, "skills", "release-steps", "SKILL.md")
	if _, err := os.Stat(steps); err != nil {
		t.Fatal("archived without being confirmed")
	}
	out = must("curator", "run", "--yes")
	if !strings.Contains(out, "archived release-steps (version 2") || !strings.Contains(out, "leave deploy-verify: duplicate of deploy-check") || !strings.Contains(out, "pinned") ||
		strings.Contains(out, "archived deploy") || strings.Contains(out, "archived release-checklist") {
		t.Fatalf("run:\n%s", out)
	}
	if _, err := os.Stat(steps); err == nil {
		t.Fatal("the duplicate is still on disk")
	}
	if _, err := os.Stat(filepath.Join(home, "skills", "deploy-verify", "SKILL.md")); err != nil {
		t.Fatal("the pinned duplicate was touched")
	}
	hist := must("skills", "history", "release-steps")
	if last := lastLine(hist); !strings.Contains(last, "curator cur-") || !strings.Contains(last, "archive") || !strings.Contains(last, "curator: duplicate of release-checklist") {
		t.Fatalf("history:\n%s", hist)
	}
	if out := must("curator", "status"); !strings.Contains(out, "archived release-steps") || !strings.Contains(out, "nothing to archive") {
		t.Fatalf("status after the run:\n%s", out)
	}
	must("skills", "rollback", "release-steps")
	if got, _ := os.ReadFile(steps); string(got) != curatedSkill("release-steps", "Cut a release", curatedSteps) {
		t.Fatalf("rollback restored %q", got)
	}

	// Scheduled through cron: the job's script runs the curator here.
	out = must("cron", "add", "--schedule", "every 7d", "--no-agent", "--name", "curator", "--script", "hermes curator run --yes")
	id := regexp.MustCompile(`job (\S+)`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("cron add: %s", out)
	}
	if out, errOut, code := h("cron", "run", id[1]); code != 0 {
		t.Fatalf("cron run: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(steps); err == nil {
		t.Fatal("the scheduled curator run did not archive the duplicate")
	}
	if last := lastLine(must("skills", "history", "release-steps")); !strings.Contains(last, "curator cur-") {
		t.Fatalf("history after the cron run: %s", last)
	}
	must("skills", "restore", "release-steps")
	if _, err := os.Stat(steps); err != nil {
		t.Fatal("restore did not bring the skill back")
	}
}
