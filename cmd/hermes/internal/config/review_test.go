package config

import (
	"strings"
	"testing"
	"time"
)

// The background review's keys: upstream's intervals and model section,
// the off switch and the budget, and their defaults.
func TestReviewKeys(t *testing.T) {
	clean(t)
	t.Setenv("OPENROUTER_API_KEY", "sk-or")
	for _, tc := range []struct {
		name, yaml string
		want       Review
		model      string
		provider   string
	}{
		{"defaults", "model: gpt-4o-mini\n", Review{On: true, SkillsAfter: 10, MemoryAfter: 10, MaxSteps: 8, MaxCost: 0.25, Timeout: 2 * time.Minute}, "", ""},
		{"upstream keys", `model: gpt-4o-mini
skills:
  creation_nudge_interval: 3
  background_review_max_steps: 4
  background_review_max_cost: 0
memory:
  nudge_interval: 0
auxiliary:
  background_review:
    provider: openrouter
    model: google/gemini-3-flash-preview
    timeout: 30
    api_key: ""
`, Review{On: true, SkillsAfter: 3, MaxSteps: 4, Timeout: 30 * time.Second}, "google/gemini-3-flash-preview", "openrouter"},
		{"auto is the main model", "model: gpt-4o-mini\nauxiliary:\n  background_review:\n    provider: auto\n    model: \"\"\n",
			Review{On: true, SkillsAfter: 10, MemoryAfter: 10, MaxSteps: 8, MaxCost: 0.25, Timeout: 2 * time.Minute}, "", ""},
		{"off", "model: gpt-4o-mini\nskills:\n  background_review: false\n", Review{SkillsAfter: 10, MemoryAfter: 10, MaxSteps: 8, MaxCost: 0.25, Timeout: 2 * time.Minute}, "", ""},
		{"both intervals 0 is off", "model: gpt-4o-mini\nskills:\n  creation_nudge_interval: 0\nmemory:\n  nudge_interval: 0\n",
			Review{MaxSteps: 8, MaxCost: 0.25, Timeout: 2 * time.Minute}, "", ""},
		{"memory off: no memory review", "model: gpt-4o-mini\nmemory:\n  memory_enabled: false\n", Review{On: true, SkillsAfter: 10, MaxSteps: 8, MaxCost: 0.25, Timeout: 2 * time.Minute}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(homeWith(t, tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			r, err := Resolve(t.TempDir(), c, Overrides{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Review != tc.want || r.ReviewModel != tc.model || r.ReviewAux.Provider != tc.provider {
				t.Fatalf("review %+v model %q provider %q", r.Review, r.ReviewModel, r.ReviewAux.Provider)
			}
			if tc.provider == "openrouter" && (r.ReviewAux.APIKey != "sk-or" || !strings.Contains(r.ReviewAux.BaseURL, "openrouter.ai")) {
				t.Fatalf("the review's endpoint %+v", r.ReviewAux)
			}
		})
	}
	if _, err := Load(homeWith(t, "skills:\n  background_reviw: false\n")); err == nil || !strings.Contains(err.Error(), "background_review") {
		t.Fatalf("a misspelt key: %v", err)
	}
}
