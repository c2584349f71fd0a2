package skills

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/schema"
)

const release = "---\nname: release-checklist\ndescription: Steps to cut a release of a Go module\nversion: 1\n---\n\n1. Run the tests.\n2. Tag vX.Y.Z.\n"

func TestSkillsLifecycle(t *testing.T) {
	project, home := t.TempDir(), t.TempDir()
	lib := Library{Dirs: []string{project, home}}
	var recorded []schema.Payload
	env := &tool.Env{Values: tool.NewSessionValues(), Record: func(_ context.Context, ps ...schema.Payload) error {
		recorded = append(recorded, ps...)
		return nil
	}}
	ctx := tool.WithEnv(context.Background(), env)
	tools := map[string]tool.Tool{}
	for _, tl := range Tools(lib) {
		tools[tl.Spec().Name] = tl
	}
	run := func(name string, args map[string]any) (string, error) {
		b, _ := json.Marshal(args)
		return tools[name].Run(ctx, b)
	}
	if out, _ := run("skills_list", nil); out != "no skills yet" {
		t.Fatal(out)
	}
	if _, err := run("skill_manage", map[string]any{"action": "create", "name": "release-checklist", "content": release}); err != nil {
		t.Fatal(err)
	}
	if out, _ := run("skills_list", nil); out != "- release-checklist: Steps to cut a release of a Go module\n" {
		t.Fatalf("list %q", out)
	}
	if out, _ := run("skill_view", map[string]any{"name": "release-checklist"}); out != release {
		t.Fatalf("view %q", out)
	}
	if _, err := run("skill_manage", map[string]any{"action": "patch", "name": "release-checklist", "old_string": "2. Tag", "new_string": "2. Update CHANGELOG.\n3. Tag"}); err != nil {
		t.Fatal(err)
	}
	s, err := lib.Get("release-checklist")
	if err != nil || !strings.Contains(s.Body, "3. Tag") || s.Meta["version"] != 1 {
		t.Fatalf("%+v %v", s, err)
	}
	for _, bad := range []map[string]any{
		{"action": "create", "name": "release-checklist", "content": release},
		{"action": "create", "name": "x", "content": "no frontmatter"},
		{"action": "create", "name": "Bad Name", "content": release},
		{"action": "patch", "name": "release-checklist", "old_string": "name: release-checklist", "new_string": "name: BAD NAME"},
		{"action": "delete", "name": "nope"},
	} {
		if _, err := run("skill_manage", bad); err == nil {
			t.Errorf("accepted %v", bad)
		}
	}
	// A project skill of the same name wins in the index.
	os.MkdirAll(filepath.Join(project, "ops", "release-checklist"), 0o755)
	os.WriteFile(filepath.Join(project, "ops", "release-checklist", "SKILL.md"), []byte(strings.Replace(release, "of a Go module", "for this project", 1)), 0o644)
	if s, _ := lib.Get("release-checklist"); s.Description != "Steps to cut a release for this project" {
		t.Fatalf("project skill did not win: %q", s.Description)
	}
	if _, err := run("skill_manage", map[string]any{"action": "delete", "name": "release-checklist"}); err != nil {
		t.Fatal(err)
	}
	if len(recorded) != 3 || recorded[0].(schema.SkillWritten).Action != "create" || recorded[2].(schema.SkillWritten).Action != "delete" {
		t.Fatalf("events %+v", recorded)
	}
	// install
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "SKILL.md"), []byte(strings.Replace(release, "release-checklist", "imported", 1)), 0o644)
	os.WriteFile(filepath.Join(src, "helper.sh"), []byte("echo hi"), 0o755)
	if s, err := lib.Install(src); err != nil || s.Name != "imported" {
		t.Fatalf("install %+v %v", s, err)
	}
	if _, err := os.Stat(filepath.Join(home, "imported", "helper.sh")); err != nil {
		t.Fatal("install did not copy the skill's files")
	}
}

// TestPythonAgentSkills: skills as the Python Hermes Agent files them
// (under a category directory, names with dots and underscores, saved with
// CRLF line ends) load, are patched where they are, and are neither
// duplicated by a create of the same name nor replaced by an install.
func TestPythonAgentSkills(t *testing.T) {
	home := t.TempDir()
	lib := Library{Dirs: []string{home}}
	dir := filepath.Join(home, "devops", "deploy_check.v2")
	os.MkdirAll(dir, 0o755)
	py := "---\r\nname: deploy_check.v2\r\ndescription: Check a deploy\r\nmetadata:\r\n  hermes:\r\n    tags: [ops]\r\n---\r\n\r\nRun the smoke tests.\r\n"
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(py), 0o644)
	archived := filepath.Join(home, ".archive", "deploy_check.v2")
	os.MkdirAll(archived, 0o755)
	os.WriteFile(filepath.Join(archived, "SKILL.md"), []byte("---\nname: deploy_check.v2\ndescription: old\n---\nArchived.\n"), 0o644)
	all, errs := lib.All()
	if len(errs) > 0 || len(all) != 1 || all[0].Name != "deploy_check.v2" || all[0].Body != "Run the smoke tests.\n" {
		t.Fatalf("skills %+v, errors %v", all, errs)
	}
	ctx := tool.WithEnv(context.Background(), &tool.Env{Values: tool.NewSessionValues()})
	var manage tool.Tool
	for _, tl := range Tools(lib) {
		if tl.Spec().Name == "skill_manage" {
			manage = tl
		}
	}
	run := func(args map[string]any) error {
		b, _ := json.Marshal(args)
		_, err := manage.Run(ctx, b)
		return err
	}
	if err := run(map[string]any{"action": "create", "name": "deploy_check.v2", "content": "---\nname: deploy_check.v2\ndescription: another\n---\nx\n"}); err == nil {
		t.Fatal("a create of an existing name succeeded")
	}
	if err := run(map[string]any{"action": "patch", "name": "deploy_check.v2", "old_string": "smoke", "new_string": "canary"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "SKILL.md")); !strings.Contains(string(b), "Run the canary tests.\r\n") {
		t.Fatalf("patched in place: %q", b)
	}
	if _, err := os.Stat(filepath.Join(home, "deploy_check.v2")); !os.IsNotExist(err) {
		t.Fatalf("a second copy at the top: %v", err)
	}
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "SKILL.md"), []byte("---\nname: deploy_check.v2\ndescription: another\n---\nx\n"), 0o644)
	if _, err := lib.Install(src); err == nil {
		t.Fatal("an install over the Python skill succeeded without --force")
	}
}
