package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLiveFollowsTheFile: Live.Load answers what Load does as the file
// changes — a missing file, a setting, a changed one, a file that no
// longer parses (its error), and a good one again.
func TestLiveFollowsTheFile(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, "config.yaml")
	var l Live
	if c, err := l.Load(home); err != nil || c.Provider != "" {
		t.Fatalf("no file: %+v, %v", c.Provider, err)
	}
	for _, step := range []struct{ text, provider string }{
		{"provider: openrouter\n", "openrouter"},
		{"provider: openrouter\n", "openrouter"}, // unchanged: the parse kept
		{"provider: anthropic\n", "anthropic"},
		{"provider: [unclosed\n", ""},
		{"provider: openai\n", "openai"},
	} {
		if err := os.WriteFile(path, []byte(step.text), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := l.Load(home)
		want, wantErr := Load(home)
		if (err != nil) != (wantErr != nil) || c.Provider != want.Provider || c.Provider != step.provider && err == nil {
			t.Errorf("%q: Live gives %q, %v; Load gives %q, %v", step.text, c.Provider, err, want.Provider, wantErr)
		}
		if step.provider == "" && err == nil {
			t.Errorf("%q: no error", step.text)
		}
	}
}
