package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/skillhub/skillhubtest"
)

// An update does not write over a change made here since the install
// without --force; with it, the change stays in the history.
func TestSkillsUpdateKeepsLocalChanges(t *testing.T) {
	quietEnv(t)
	git := skillhubtest.StartGit(t)
	repo := git.Repo(t, "acme/skills")
	repo.Commit("one", map[string]string{"release-checklist/SKILL.md": hubChecklist})
	home := t.TempDir()
	src := "git+" + repo.URL + "//release-checklist"

	out := mustIn(t, home, "skills", "inspect", src)
	if !strings.Contains(out, "scan: nothing found") || !strings.Contains(out, "1. Run the tests.") {
		t.Fatalf("inspect:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(home, "skills", "release-checklist")); err == nil {
		t.Fatal("inspect installed the skill")
	}
	mustIn(t, home, "skills", "install", "--yes", src)
	if _, _, err := inHome(t, home, "skills", "install", "--yes", src); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("a second install: %v", err)
	}
	md := filepath.Join(home, "skills", "release-checklist", "SKILL.md")
	edited := strings.Replace(hubChecklist, "1. Run the tests.", "1. Run the tests twice.", 1)
	os.WriteFile(md, []byte(edited), 0o644)
	repo.Commit("two", map[string]string{"release-checklist/SKILL.md": strings.Replace(hubChecklist, "2. Run", "2. Sign, then run", 1)})

	if out := mustIn(t, home, "skills", "check"); !strings.Contains(out, "update available, changed here since version 1") {
		t.Fatalf("check:\n%s", out)
	}
	_, errOut, err := inHome(t, home, "skills", "update", "--yes")
	if err == nil || !strings.Contains(errOut, "changed here since version 1") {
		t.Fatalf("update over a local change: %v\n%s", err, errOut)
	}
	if got, _ := os.ReadFile(md); string(got) != edited {
		t.Fatalf("the local change was written over: %q", got)
	}
	if out := mustIn(t, home, "skills", "update", "--yes", "--force"); !strings.Contains(out, "updated release-checklist: version 3") {
		t.Fatalf("update --force:\n%s", out)
	}
	hist := mustIn(t, home, "skills", "history", "release-checklist")
	if !strings.Contains(hist, "adopted from disk") || !strings.Contains(lastLine(hist), "update") {
		t.Fatalf("history:\n%s", hist)
	}

	// What is not a hub's skill.
	manageSkills(t, home, "s1", map[string]any{"action": "create", "name": "mine", "content": "---\nname: mine\ndescription: Mine\n---\nx\n"})
	if _, _, err := inHome(t, home, "skills", "uninstall", "mine"); err == nil || !strings.Contains(err.Error(), "not installed from a hub") {
		t.Fatalf("uninstall of the agent's own skill: %v", err)
	}
	if _, _, err := inHome(t, home, "skills", "install", "no-such-thing"); err == nil || !strings.Contains(err.Error(), "neither a skill directory") {
		t.Fatalf("install of nothing: %v", err)
	}
	if _, _, err := inHome(t, home, "skills", "install", "--yes", "git+"+repo.URL+"//missing"); err == nil || !strings.Contains(err.Error(), "no SKILL.md") {
		t.Fatalf("install of a missing path: %v", err)
	}
}
