package prompt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBuild(t *testing.T) {
	home, wd := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(home, "memories"), 0o700)
	os.WriteFile(filepath.Join(home, "memories", "MEMORY.md"), []byte("Project uses Go 1.26\n§\nTests run with -race"), 0o600)
	os.WriteFile(filepath.Join(wd, "AGENTS.md"), []byte("Run make before committing."), 0o600)
	os.WriteFile(filepath.Join(wd, ".hermes.md"), []byte(strings.Repeat("x", maxContextFile+10)), 0o600)
	p := Build(Options{Home: home, WorkingDir: wd, ToolNames: []string{"terminal"}, Skills: []Skill{{"b-skill", "second"}, {"a-skill", "first"}},
		Now: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)})
	for _, want := range []string{DefaultIdentity, "## Using tools", "Project uses Go 1.26", "- a-skill: first\n- b-skill: second",
		"## Project context from AGENTS.md\nRun make before committing.", "[… truncated]", "Working directory: " + wd, "Sunday, 22 November 2026"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
	if Build(Options{Home: home, WorkingDir: wd}) != Build(Options{Home: home, WorkingDir: wd}) {
		t.Error("the prefix is not stable for the same inputs")
	}
	os.WriteFile(filepath.Join(home, "SOUL.md"), []byte("You are Ada."), 0o600)
	if p := Build(Options{Home: home}); !strings.HasPrefix(p, "You are Ada.") {
		t.Errorf("SOUL.md not used: %q", p[:40])
	}
}
