package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// TestVisionAnalyzeTool: the model calls vision_analyze on a file of the
// working directory; the main model (it sees) is asked the question with
// the image's bytes, the answer is the tool's result, and the call is
// recorded in the session. With auxiliary.vision set, that model is asked
// instead.
func TestVisionAnalyzeTool(t *testing.T) {
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "v", Name: "vision_analyze", Args: `{"image_url":"dot.png","question":"what colour is the dot?"}`}}},
		llmtest.Reply{Content: "It is black."},
		llmtest.Reply{Content: "The dot is black."},
	)
	defer srv.Close()
	home, wd := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(wd, "dot.png"), dotPNG, 0o644)
	out, errOut, code := hermesIn(t, wd, chatEnv(srv), "", "--home", home, "chat", "--model", "gpt-4o-mini", "-q", "look at dot")
	if code != 0 || out != "The dot is black.\n" {
		t.Fatalf("exit %d %q %s", code, out, errOut)
	}
	reqs := srv.Requests()
	if !sentImage(t, reqs[1]) || !strings.Contains(string(reqs[1].Raw), "what colour is the dot?") || reqs[1].Body["model"] != "gpt-4o-mini" {
		t.Fatalf("the vision request %s", reqs[1].Raw)
	}
	if !strings.Contains(string(reqs[2].Raw), `\"analysis\":\"It is black.\"`) {
		t.Fatalf("the tool result %s", reqs[2].Raw)
	}
	id := sessionIDFrom(t, errOut)
	if ev := mustRun(t, home, "sessions", "events", id); !strings.Contains(ev, "AuxiliaryCallCompleted") {
		t.Fatalf("the vision call is not recorded:\n%s", ev)
	}

	// auxiliary.vision names the model asked.
	srv.Add(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "v", Name: "vision_analyze", Args: `{"image_url":"dot.png","question":"and now?"}`}}},
		llmtest.Reply{Content: "Still black."}, llmtest.Reply{Content: "Black."})
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("auxiliary:\n  vision:\n    model: eyes-1\n"), 0o600)
	if out, errOut, code = hermesIn(t, wd, chatEnv(srv), "", "--home", home, "chat", "--model", "gpt-4o-mini", "-q", "again"); code != 0 || out != "Black.\n" {
		t.Fatalf("exit %d %q %s", code, out, errOut)
	}
	if reqs = srv.Requests(); reqs[4].Body["model"] != "eyes-1" || !sentImage(t, reqs[4]) {
		t.Fatalf("the auxiliary vision request %s", reqs[4].Raw)
	}
}

// TestVisionAnalyzeOnlyWhereAModelSees: a text-only main model with no
// auxiliary.vision is not offered vision_analyze (it could only fail);
// with auxiliary.vision it is.
func TestVisionAnalyzeOnlyWhereAModelSees(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "ok"}, llmtest.Reply{Content: "ok"})
	defer srv.Close()
	home, wd := t.TempDir(), t.TempDir()
	if _, errOut, code := hermesIn(t, wd, chatEnv(srv), "", "--home", home, "chat", "--model", "deepseek-chat", "-q", "hi"); code != 0 {
		t.Fatalf("exit %d %s", code, errOut)
	}
	if strings.Contains(string(srv.Requests()[0].Raw), `"name":"vision_analyze"`) {
		t.Fatal("vision_analyze offered with no model that sees")
	}
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("auxiliary:\n  vision:\n    model: eyes-1\n"), 0o600)
	if _, errOut, code := hermesIn(t, wd, chatEnv(srv), "", "--home", home, "chat", "--model", "deepseek-chat", "-q", "hi"); code != 0 {
		t.Fatalf("exit %d %s", code, errOut)
	}
	if !strings.Contains(string(srv.Requests()[1].Raw), `"name":"vision_analyze"`) {
		t.Fatal("vision_analyze not offered with auxiliary.vision set")
	}
}
