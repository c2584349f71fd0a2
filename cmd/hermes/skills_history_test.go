package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/events/embedded"
)

const checklist = "---\nname: release-checklist\ndescription: Steps to cut a release\n---\n\n1. Run the tests.\n2. Tag vX.Y.Z.\n"

// manageSkills runs skill_manage calls, as session sid, on home's skills
// kept in its embedded store, and returns the answers.
func manageSkills(t *testing.T, home, sid string, calls ...map[string]any) []string {
	t.Helper()
	store, err := embedded.Open(filepath.Join(home, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	lib := app.KeptLibrary(home, t.TempDir(), store)
	var manage tool.Tool
	for _, tl := range skills.Tools(lib) {
		if tl.Spec().Name == "skill_manage" {
			manage = tl
		}
	}
	ctx := tool.WithEnv(context.Background(), &tool.Env{SessionID: sid, TurnID: "t1", Values: tool.NewSessionValues()})
	var outs []string
	for _, c := range calls {
		b, _ := json.Marshal(c)
		out, err := manage.Run(ctx, b)
		if err != nil {
			t.Fatalf("skill_manage %v: %v", c, err)
		}
		outs = append(outs, out)
	}
	return outs
}

func mustIn(t *testing.T, home string, args ...string) string {
	t.Helper()
	out, errOut, err := inHome(t, home, args...)
	if err != nil {
		t.Fatalf("hermes %v: %v\n%s", args, err, errOut)
	}
	return out
}

func TestSkillsHistoryDiffRollback(t *testing.T) {
	quietEnv(t)
	home := t.TempDir()
	outs := manageSkills(t, home, "0b7e5c1a-6d7b-4f8e-9a43-3c2d1e0f9a8b",
		map[string]any{"action": "create", "name": "release-checklist", "content": checklist},
		map[string]any{"action": "patch", "name": "release-checklist", "old_string": "2. Tag", "new_string": "2. Update the CHANGELOG.\n3. Tag", "reason": "the changelog was forgotten"})
	if !strings.Contains(outs[0], "version 1") || !strings.Contains(outs[1], "version 2") {
		t.Fatalf("answers %q", outs)
	}
	md := filepath.Join(home, "skills", "release-checklist", "SKILL.md")
	v2, _ := os.ReadFile(md)
	handEdit := strings.Replace(string(v2), "1. Run the tests.", "1. Run the tests with -race.", 1)
	if err := os.WriteFile(md, []byte(handEdit), 0o644); err != nil {
		t.Fatal(err)
	}

	out := mustIn(t, home, "skills", "history", "release-checklist")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("history:\n%s", out)
	}
	for i, want := range [][]string{
		{"v1", "session 0b7e5c1a", "create", "skill_manage create"},
		{"v2", "session 0b7e5c1a", "patch", "the changelog was forgotten"},
		{"v3", "adopted from disk", "adopt", "changed on disk outside hermes"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i+1], w) {
				t.Fatalf("history line %d lacks %q:\n%s", i+1, w, out)
			}
		}
	}
	if got, _ := os.ReadFile(md); string(got) != handEdit {
		t.Fatal("opening the home changed the hand-edited SKILL.md")
	}

	// Default: the previous version against the current one.
	diff := mustIn(t, home, "skills", "diff", "release-checklist")
	want := "--- release-checklist@v2/SKILL.md\n+++ release-checklist@v3/SKILL.md\n@@ -3,6 +3,6 @@\n description: Steps to cut a release\n ---\n \n-1. Run the tests.\n+1. Run the tests with -race.\n 2. Update the CHANGELOG.\n 3. Tag vX.Y.Z.\n"
	if diff != want {
		t.Fatalf("diff:\n%s\nwant\n%s", diff, want)
	}
	if diff := mustIn(t, home, "skills", "diff", "release-checklist", "1", "v2"); !strings.Contains(diff, "-2. Tag vX.Y.Z.\n+2. Update the CHANGELOG.\n+3. Tag vX.Y.Z.\n") {
		t.Fatalf("diff 1 2:\n%s", diff)
	}
	if _, _, err := inHome(t, home, "skills", "diff", "release-checklist", "9"); err == nil {
		t.Fatal("a diff with a version that does not exist succeeded")
	}

	out = mustIn(t, home, "skills", "rollback", "release-checklist", "1")
	if !strings.Contains(out, "version 4") || !strings.Contains(out, "rollback to v1") {
		t.Fatalf("rollback: %q", out)
	}
	if got, _ := os.ReadFile(md); string(got) != checklist {
		t.Fatalf("rolled back to %q, want v1's bytes", got)
	}
	out = mustIn(t, home, "skills", "history", "release-checklist")
	if last := strings.Split(strings.TrimSpace(out), "\n")[4]; !strings.Contains(last, "v4") || !strings.Contains(last, "person ") || !strings.Contains(last, "rollback to v1") {
		t.Fatalf("history after rollback:\n%s", out)
	}
	// With no version: back to the one before the current one (v3, the
	// hand edit).
	mustIn(t, home, "skills", "rollback", "release-checklist")
	if got, _ := os.ReadFile(md); string(got) != handEdit {
		t.Fatalf("rollback without a version gave %q", got)
	}
	if _, _, err := inHome(t, home, "skills", "history", "no-such-skill"); err == nil {
		t.Fatal("history of an unknown skill succeeded")
	}
}

func TestProjectionsRebuildRecreatesSkillsLeavesForeign(t *testing.T) {
	quietEnv(t)
	home := t.TempDir()
	manageSkills(t, home, "s1",
		map[string]any{"action": "create", "name": "release-checklist", "content": checklist},
		map[string]any{"action": "patch", "name": "release-checklist", "old_string": "1. Run", "new_string": "1. Always run"})
	ours := filepath.Join(home, "skills", "release-checklist")
	want, _ := os.ReadFile(filepath.Join(ours, "SKILL.md"))

	// A skill the Python agent wrote (category, linked file), and a broken one.
	py := filepath.Join(home, "skills", "devops", "deploy_check")
	os.MkdirAll(filepath.Join(py, "scripts"), 0o755)
	pyMD := "---\r\nname: deploy_check\r\ndescription: Check a deploy\r\n---\r\nRun scripts/smoke.sh\r\n"
	os.WriteFile(filepath.Join(py, "SKILL.md"), []byte(pyMD), 0o644)
	os.WriteFile(filepath.Join(py, "scripts", "smoke.sh"), []byte("#!/bin/sh\n"), 0o755)
	broken := filepath.Join(home, "skills", "broken", "SKILL.md")
	os.MkdirAll(filepath.Dir(broken), 0o755)
	os.WriteFile(broken, []byte("name: broken\n"), 0o644)
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	for _, p := range []string{filepath.Join(py, "SKILL.md"), filepath.Join(py, "scripts", "smoke.sh"), broken} {
		os.Chtimes(p, old, old)
	}

	if err := os.RemoveAll(ours); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := inHome(t, home, "projections", "rebuild")
	if err != nil {
		t.Fatalf("rebuild: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, broken) {
		t.Fatalf("the malformed skill was not reported: %q", errOut)
	}
	if got, _ := os.ReadFile(filepath.Join(ours, "SKILL.md")); string(got) != string(want) {
		t.Fatalf("rebuild recreated %q, want %q (out %s)", got, want, out)
	}
	for p, text := range map[string]string{filepath.Join(py, "SKILL.md"): pyMD, filepath.Join(py, "scripts", "smoke.sh"): "#!/bin/sh\n", broken: "name: broken\n"} {
		info, err := os.Stat(p)
		got, _ := os.ReadFile(p)
		if err != nil || string(got) != text || !info.ModTime().Equal(old) {
			t.Fatalf("%s was touched by the rebuild: %q %v", p, got, err)
		}
	}
	// The Python skill now has a history: adopted, as it is.
	out = mustIn(t, home, "skills", "history", "deploy_check")
	if !strings.Contains(out, "adopted from disk") || !strings.Contains(out, "found on disk without a history") {
		t.Fatalf("history:\n%s", out)
	}
	// A second rebuild writes nothing.
	mustIn(t, home, "projections", "rebuild")
	if info, _ := os.Stat(filepath.Join(py, "SKILL.md")); !info.ModTime().Equal(old) {
		t.Fatal("a second rebuild rewrote the Python skill")
	}
}
