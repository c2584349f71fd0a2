package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSkillsInstallIsAVersion(t *testing.T) {
	quietEnv(t)
	home, src := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(src, "scripts"), 0o755)
	os.WriteFile(filepath.Join(src, "SKILL.md"), []byte(checklist), 0o644)
	os.WriteFile(filepath.Join(src, "scripts", "tag.sh"), []byte("git tag \"$1\"\n"), 0o755)
	if out := mustIn(t, home, "skills", "install", src); !strings.Contains(out, "installed release-checklist") || !strings.Contains(out, "version 1") {
		t.Fatalf("install: %q", out)
	}
	installed := filepath.Join(home, "skills", "release-checklist")
	if info, err := os.Stat(filepath.Join(installed, "scripts", "tag.sh")); err != nil || info.Mode().Perm() != 0o755 {
		t.Fatalf("linked file: %v %v", info, err)
	}
	changed := strings.Replace(checklist, "2. Tag", "2. Sign and tag", 1)
	os.WriteFile(filepath.Join(src, "SKILL.md"), []byte(changed), 0o644)
	if _, errOut, err := inHome(t, home, "skills", "install", src); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("a second install replaced the skill: %v %s", err, errOut)
	}
	if out := mustIn(t, home, "skills", "install", "--force", src); !strings.Contains(out, "version 2") {
		t.Fatalf("install --force: %q", out)
	}
	if got, _ := os.ReadFile(filepath.Join(installed, "SKILL.md")); string(got) != changed {
		t.Fatalf("after --force: %q", got)
	}
	out := mustIn(t, home, "skills", "history", "release-checklist")
	if strings.Count(out, "installed from "+src) != 2 || strings.Count(out, "person ") != 2 {
		t.Fatalf("history:\n%s", out)
	}
}
