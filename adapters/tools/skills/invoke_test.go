package skills

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/tool"
)

func writeSkill(t *testing.T, dir, rel, text string, files map[string]string) {
	t.Helper()
	d := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(d, "SKILL.md"), []byte(text), 0o644)
	for p, c := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(d, p)), 0o755)
		os.WriteFile(filepath.Join(d, p), []byte(c), 0o644)
	}
}

const deploy = `---
name: deploy-check
description: Check a deploy
metadata:
  hermes:
    config:
      - key: deploy.target
        description: Where deploys go
        default: staging
      - key: deploy.token_file
        description: The token's file
---
Deploy to ${HERMES_SKILL_DIR} in session ${HERMES_SESSION_ID}.
`

func TestInvokeSkillStackedAndBundle(t *testing.T) {
	home := t.TempDir()
	writeSkill(t, home, "devops/deploy-check", deploy, map[string]string{"scripts/run.sh": "echo hi\n"})
	writeSkill(t, home, "notes", "---\nname: notes\ndescription: Take notes\n---\nWrite notes.\n", nil)
	writeSkill(t, home, "mac-only", "---\nname: mac-only\ndescription: Mac things\nplatforms: [macos]\n---\nUse brew.\n", nil)
	writeSkill(t, home, "web-less", "---\nname: web-less\ndescription: No web\nmetadata:\n  hermes:\n    fallback_for_toolsets: [web]\n---\nCurl it.\n", nil)
	bundles := filepath.Join(t.TempDir(), "skill-bundles")
	os.MkdirAll(bundles, 0o755)
	os.WriteFile(filepath.Join(bundles, "ops.yaml"), []byte("name: ops\nskills: [deploy-check, mac-only, nope]\ninstruction: Be careful.\n"), 0o644)
	in := Invoker{Library: Library{Dirs: []string{home}}, BundlesDir: bundles, Config: map[string]any{"deploy": map[string]any{"target": "production"}}}
	w := Where{OS: "linux", Platform: "cli", Tools: []string{"terminal", "web_search"}, Toolsets: []string{"terminal", "web"}}

	inv, err := in.Invoke(w, "s-1", "deploy-check", "the api")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, "devops", "deploy-check")
	for _, want := range []string{`invoked the "deploy-check" skill`, "Deploy to " + dir + " in session s-1.", "deploy.target = production", "deploy.token_file = (not set)",
		"scripts/run.sh  ->  " + filepath.Join(dir, "scripts", "run.sh"), "instruction alongside the skill invocation: the api"} {
		if !strings.Contains(inv.Text, want) {
			t.Fatalf("message lacks %q:\n%s", want, inv.Text)
		}
	}
	if len(inv.Skills) != 1 || inv.Skills[0] != "deploy-check" {
		t.Fatalf("skills %v", inv.Skills)
	}

	inv, err = in.Invoke(w, "", "deploy_check", "/notes do it")
	if err != nil || strings.Join(inv.Skills, ",") != "deploy-check,notes" || !strings.Contains(inv.Text, "User instruction: do it") {
		t.Fatalf("stacked: %v %v\n%s", inv.Skills, err, inv.Text)
	}

	inv, err = in.Invoke(w, "", "ops", "now")
	if err != nil || inv.Bundle != "ops" || strings.Join(inv.Skills, ",") != "deploy-check" || strings.Join(inv.Missing, ",") != "mac-only,nope" ||
		!strings.Contains(inv.Text, "Bundle instruction: Be careful.") || !strings.Contains(inv.Text, "User instruction: now") {
		t.Fatalf("bundle: %+v %v", inv, err)
	}

	var ex *ExcludedError
	if _, err := in.Invoke(w, "", "mac-only", ""); !errors.As(err, &ex) || !strings.Contains(err.Error(), "macos") {
		t.Fatalf("mac-only on linux: %v", err)
	}
	if _, err := in.Invoke(w, "", "web-less", ""); !errors.As(err, &ex) || !strings.Contains(err.Error(), "web toolset") {
		t.Fatalf("fallback with web on: %v", err)
	}
	if _, err := in.Invoke(Where{OS: "linux", Toolsets: []string{"terminal"}, Tools: []string{}}, "", "web-less", ""); err != nil {
		t.Fatalf("fallback without web: %v", err)
	}
	if _, err := in.Invoke(w, "", "nothing-here", ""); !errors.Is(err, ErrNoSkill) {
		t.Fatalf("unknown: %v", err)
	}
	off := w
	off.PlatformDisabled = map[string][]string{"cli": {"notes"}}
	if _, err := in.Invoke(off, "", "notes", ""); !errors.As(err, &ex) || !strings.Contains(err.Error(), "skills.platform_disabled.cli") {
		t.Fatalf("platform disabled: %v", err)
	}
	off.Platform = "telegram"
	if _, err := in.Invoke(off, "", "notes", ""); err != nil {
		t.Fatalf("disabled on cli only: %v", err)
	}
	offered, excluded := in.Library.Offered(w)
	if len(offered) != 2 || excluded["mac-only"] == "" || excluded["web-less"] == "" {
		t.Fatalf("offered %v excluded %v", offered, excluded)
	}
	if c := in.Library.Category(offered[0]); c != "devops" {
		t.Fatalf("category %q", c)
	}
}

func TestManageCategoryAndLinkedFiles(t *testing.T) {
	k := newKept(t)
	k.must("s1", map[string]any{"action": "create", "name": "notes", "category": "writing", "content": "---\nname: notes\ndescription: Take notes\n---\nWrite notes.\n"})
	if _, err := os.Stat(filepath.Join(k.home, "writing", "notes", "SKILL.md")); err != nil {
		t.Fatal("not filed under its category:", err)
	}
	out := k.must("s1", map[string]any{"action": "write_file", "name": "notes", "file_path": "templates/note.md", "file_content": "# Note\n"})
	if !strings.Contains(out, "version 2") {
		t.Fatal(out)
	}
	tools := map[string]tool.Tool{}
	for _, tl := range Tools(k.lib) {
		tools[tl.Spec().Name] = tl
	}
	run := func(name string, args map[string]any) (string, error) {
		b, _ := json.Marshal(args)
		return tools[name].Run(context.Background(), b)
	}
	if out, _ := run("skill_view", map[string]any{"name": "notes"}); !strings.Contains(out, "linked files of notes: templates/note.md") {
		t.Fatalf("view: %s", out)
	}
	if out, err := run("skill_view", map[string]any{"name": "notes", "file_path": "templates/note.md"}); err != nil || out != "# Note\n" {
		t.Fatalf("view file: %q %v", out, err)
	}
	if _, err := run("skill_view", map[string]any{"name": "notes", "file_path": "../../etc/passwd"}); err == nil {
		t.Fatal("a path out of the skill was read")
	}
	if out, _ := run("skills_list", map[string]any{"category": "writing"}); out != "- [writing] notes: Take notes\n" {
		t.Fatalf("list: %q", out)
	}
	if out, _ := run("skills_list", map[string]any{"category": "nope"}); !strings.Contains(out, "categories: writing") {
		t.Fatalf("list of another category: %q", out)
	}
	for _, bad := range []map[string]any{
		{"action": "write_file", "name": "notes", "file_path": "SKILL.md", "file_content": "x"},
		{"action": "write_file", "name": "notes", "file_path": "references/../../x", "file_content": "x"},
		{"action": "remove_file", "name": "notes", "file_path": "templates/other.md"},
		{"action": "create", "name": "x2", "category": "../up", "content": "---\nname: x2\ndescription: d\n---\n"},
	} {
		if _, err := k.run("s1", bad); err == nil {
			t.Fatalf("%v was not refused", bad)
		}
	}
	k.must("s1", map[string]any{"action": "remove_file", "name": "notes", "file_path": "templates/note.md"})
	if _, err := os.Stat(filepath.Join(k.home, "writing", "notes", "templates", "note.md")); !os.IsNotExist(err) {
		t.Fatal("the linked file stayed:", err)
	}
	hist, _, _ := History(context.Background(), k.lib.Keeper.Store, "notes")
	if len(hist) != 3 || hist[1].Action != "write_file" || hist[2].Action != "remove_file" {
		t.Fatalf("history %+v", hist)
	}
}
