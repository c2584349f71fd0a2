package config

import (
	"slices"
	"testing"
)

// The Python agent's image keys mean here what they mean there:
// model.supports_vision overrides the catalog, auxiliary.vision names the
// model that describes images for one that cannot see (its keys this build
// does not use are warned about, not refused).
func TestVisionKeys(t *testing.T) {
	clean(t)
	t.Setenv("OPENROUTER_API_KEY", "sk-or")
	c, err := Load(homeWith(t, `model:
  default: deepseek-chat
  provider: deepseek
  supports_vision: false
auxiliary:
  vision:
    provider: openrouter
    model: google/gemini-2.5-flash
    timeout: 30
`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Ignored(), []string{"auxiliary.vision.timeout"}) {
		t.Fatalf("ignored %v", c.Ignored())
	}
	r, err := Resolve(t.TempDir(), c, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Vision == nil || *r.Vision || r.VisionModel != "google/gemini-2.5-flash" || r.VisionAux.Provider != "openrouter" ||
		r.VisionAux.APIKey != "sk-or" || r.VisionAux.BaseURL != "https://openrouter.ai/api/v1" {
		t.Fatalf("resolved vision %v %q %+v", r.Vision, r.VisionModel, r.VisionAux)
	}
	// Unset: the catalog decides, and no describer.
	c, err = Load(homeWith(t, "model: gpt-4o-mini\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r, err = Resolve(t.TempDir(), c, Overrides{}); err != nil || r.Vision != nil || r.VisionModel != "" {
		t.Fatalf("unset: %v %q %v", r.Vision, r.VisionModel, err)
	}
}
