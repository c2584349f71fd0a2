package compress

import "testing"

// A model the provider catalog lists gets its window from there; others
// fall back to the family table and then the default.
func TestWindowsOf(t *testing.T) {
	w := &Windows{}
	for _, c := range []struct {
		model string
		want  int
	}{
		{"claude-sonnet-4-6", 1_000_000},        // catalog (the family table says 200k)
		{"anthropic/claude-haiku-4.5", 200_000}, // catalog, OpenRouter's name
		{"deepseek-reasoner", 1_000_000},        // catalog
		{"gpt-4o-mini", 128_000},                // both agree
		{"claude-3-opus", 200_000},              // family table
		{"some-local-model", DefaultWindow},     // nobody knows it
	} {
		if got := w.Of(c.model); got != c.want {
			t.Errorf("Of(%q) = %d, want %d", c.model, got, c.want)
		}
	}
	if got := (&Windows{Override: 5000}).Of("claude-sonnet-4-6"); got != 5000 {
		t.Errorf("the configured window lost: %d", got)
	}
}
