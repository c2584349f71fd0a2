package catalog

import "testing"

func TestVision(t *testing.T) {
	for _, c := range []struct {
		id          string
		sees, known bool
	}{
		{"gpt-4o-mini", true, true},
		{"openai/gpt-4.1", true, true},
		{"anthropic/claude-sonnet-4.5", true, true},
		{"claude-3-5-haiku-latest", true, true},
		{"gemini-2.5-flash", true, true},
		{"o3", true, true},
		{"o3-mini", false, true},
		{"deepseek-chat", false, true},
		{"deepseek/deepseek-r1", false, true},
		{"glm-4.5", false, true},
		{"glm-4.5v", true, true},
		{"NousResearch/Hermes-4-70B", false, true},
		{"my-local-model", false, false},
		{"", false, false},
	} {
		sees, known := Vision(c.id)
		if sees != c.sees || known != c.known {
			t.Errorf("Vision(%q) = %v %v, want %v %v", c.id, sees, known, c.sees, c.known)
		}
	}
}
