package files_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/agent"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/adapters/tools/files"
	"github.com/hermes-go/hermes/projections/history"
	"github.com/hermes-go/hermes/schema"
)

type nopRec struct{}

func (nopRec) Record(context.Context, string, ...schema.Payload) error { return nil }

// TestParallelWritesBothLand: one response writes two different files;
// the loop runs them at once and both are on disk.
func TestParallelWritesBothLand(t *testing.T) {
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{ID: "a", Name: "write_file", Args: `{"path":"one/a.txt","content":"alpha"}`},
			{ID: "b", Name: "write_file", Args: `{"path":"two/b.txt","content":"beta"}`}}},
		llmtest.Reply{Content: "written"})
	defer srv.Close()
	wd := t.TempDir()
	loop := &agent.Loop{Provider: openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"}), Tools: tool.NewTools(files.Tools(files.Roots{})...),
		Exec: tool.DirectExecutor{Timeout: 5 * time.Second}, Rec: nopRec{}, Budget: tool.NewBudget(5), Cfg: agent.Config{Model: "m"},
		Env: tool.Env{WorkingDir: wd}}
	if _, err := loop.Turn(context.Background(), &history.Transcript{}, "t", "write both"); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]string{"one/a.txt": "alpha", "two/b.txt": "beta"} {
		if b, err := os.ReadFile(filepath.Join(wd, f)); err != nil || string(b) != want {
			t.Fatalf("%s: %q %v", f, b, err)
		}
	}
}
