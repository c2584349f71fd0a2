package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A model name set on a key holding the mapping form goes to its default
// (Hermes' key), keeping provider, base_url and comments; where the key
// holds a name or nothing, it stays a name.
func TestSetScalarIntoModelMapping(t *testing.T) {
	for _, c := range []struct {
		name, file, key string
		want, gone      []string
	}{
		{"model mapping", "# mine\nmodel:\n  default: old-model  # the usual\n  provider: openrouter\n  base_url: http://llm.local/v1\n", "model",
			[]string{"# mine", "default: new-model", "# the usual", "provider: openrouter", "base_url: http://llm.local/v1"}, []string{"old-model", "model: new-model"}},
		{"mapping without default", "model:\n  provider: custom\n  base_url: http://llm.local/v1\n", "model",
			[]string{"default: new-model", "provider: custom", "base_url: http://llm.local/v1"}, nil},
		{"auxiliary mapping", "auxiliary:\n  compression:\n    default: small\n    provider: openai\n", "auxiliary.compression",
			[]string{"default: new-model", "provider: openai"}, []string{"small"}},
		{"model name", "model: old-model\n", "model", []string{"model: new-model"}, []string{"default"}},
		{"no model", "agent:\n  max_turns: 5\n", "model", []string{"model: new-model", "max_turns: 5"}, []string{"default"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			path := filepath.Join(home, "config.yaml")
			os.WriteFile(path, []byte(c.file), 0o600)
			if err := Set(home, c.key, "new-model"); err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(path)
			for _, w := range c.want {
				if !strings.Contains(string(data), w) {
					t.Errorf("lacks %q:\n%s", w, data)
				}
			}
			for _, g := range c.gone {
				if strings.Contains(string(data), g) {
					t.Errorf("still has %q:\n%s", g, data)
				}
			}
			cfg, err := Load(home)
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.Model.Name
			if c.key == "auxiliary.compression" {
				got = cfg.Auxiliary.Compression.Name
			}
			if got != "new-model" {
				t.Errorf("%s reads as %q", c.key, got)
			}
		})
	}
	// A mapping set on it replaces the mapping, as asked.
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model:\n  default: a\n  provider: openai\n"), 0o600)
	if err := Set(home, "model", "{default: b, provider: anthropic}"); err != nil {
		t.Fatal(err)
	}
	if cfg, err := Load(home); err != nil || cfg.Model.Name != "b" || cfg.Model.Provider != "anthropic" {
		t.Fatalf("%+v %v", cfg.Model, err)
	}
}

// agent.personalities takes Hermes' two forms; without it a few built-in
// ones are offered.
func TestPersonalities(t *testing.T) {
	home := t.TempDir()
	if c, err := Load(home); err != nil || len(c.Personalities()) == 0 || c.Personalities()["concise"].Prompt() == "" {
		t.Fatalf("built-in personalities: %v %v", c.Personalities(), err)
	}
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte(`agent:
  personalities:
    pirate: Speak like a pirate.
    mentor:
      system_prompt: You guide.
      tone: warm
      style: Socratic
      description: asks before it tells
`), 0o600)
	c, err := Load(home)
	if err != nil {
		t.Fatal(err)
	}
	ps := c.Personalities()
	if len(ps) != 2 || ps["pirate"].Prompt() != "Speak like a pirate." || ps["mentor"].Prompt() != "You guide.\nTone: warm\nStyle: Socratic" ||
		ps["mentor"].Summary() != "asks before it tells" || strings.Join(c.PersonalityNames(), ",") != "mentor,pirate" {
		t.Fatalf("personalities: %+v", ps)
	}
}
