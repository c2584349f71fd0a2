package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
)

// TestImportedSkillsHaveAHistory: the skills importHomeBeside copies from
// another home are adopted at once, where they were copied, bytes kept.
func TestImportedSkillsHaveAHistory(t *testing.T) {
	quietEnv(t)
	home, other := t.TempDir(), t.TempDir()
	md := "---\nname: deploy_check\ndescription: Check a deploy\n---\nRun the smoke tests.\n"
	p := filepath.Join(other, "skills", "devops", "deploy_check", "SKILL.md")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte(md), 0o644)
	var out bytes.Buffer
	a, err := (&app.Factory{HomeFlag: home, IO: app.IOStreams{Out: &out, ErrOut: &out}}).Open()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := importHomeBeside(context.Background(), a, other, app.IOStreams{Out: &out, ErrOut: &out}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	hist, _, err := skills.History(context.Background(), a.Store, "deploy_check")
	if err != nil || len(hist) != 1 || hist[0].Dir != "devops/deploy_check" || hist[0].Files.SkillMD() != md || hist[0].Author.Kind != "adopted from disk" {
		t.Fatalf("history %+v %v", hist, err)
	}
}
