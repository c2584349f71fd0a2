package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/projections/costs"
)

// A model with no price costs "unknown", not $0.0000, in `costs` (text
// and JSON), `sessions show`, `list` and `tree` and /usage, and the totals say how many calls
// are unpriced. Adding its price under prices: prices the calls made
// before from their token usage, without touching the log.
func TestUnknownPricesStayUnknownUntilAdded(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "hi there", Prompt: 1_000_000, Completion: 500_000},
		llmtest.Reply{Content: "again", Prompt: 1_000_000, Completion: 500_000})
	defer srv.Close()
	home := t.TempDir()
	_, errOut, code := hermes(t, chatEnv(srv), "", "--home", home, "chat", "--model", "local-llama", "-q", "hello")
	if code != 0 {
		t.Fatalf("chat: %d %s", code, errOut)
	}
	id := sessionIDFrom(t, errOut)
	_, errOut, _ = hermes(t, chatEnv(srv), "again\n/usage\n", "--home", home, "chat", "--model", "local-llama", "--resume", id)
	if !strings.Contains(errOut, "cost unknown (no price for local-llama") {
		t.Fatalf("/usage without a price:\n%s", errOut)
	}
	text := mustRun(t, home, "costs", "--by", "model")
	if !strings.Contains(text, "unknown") || strings.Contains(text, "$0.0000") || !strings.Contains(text, "2 calls have no price (local-llama)") {
		t.Fatalf("costs without a price:\n%s", text)
	}
	var rows []costs.Row
	if err := json.Unmarshal([]byte(mustRun(t, home, "costs", "--json")), &rows); err != nil || len(rows) != 1 || rows[0].Unpriced != 2 || rows[0].Cost != 0 {
		t.Fatalf("costs --json without a price: %+v %v", rows, err)
	}
	for _, args := range [][]string{{"sessions", "list"}, {"sessions", "tree", id}} {
		if out := mustRun(t, home, args...); !strings.Contains(out, "unknown") || strings.Contains(out, "$0.0000") {
			t.Fatalf("%v without a price:\n%s", args, out)
		}
	}
	show := mustRun(t, home, "sessions", "show", id)
	if !strings.Contains(show, "cost unknown") || !strings.Contains(show, "2 calls have no price (local-llama)") {
		t.Fatalf("sessions show without a price:\n%s", show)
	}

	// $1 per million prompt tokens, $2 per million completion tokens:
	// 2M + 1M = $4.
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("prices:\n  local-llama: {input: 1, output: 2}\n"), 0o600)
	text = mustRun(t, home, "costs", "--by", "model")
	if !strings.Contains(text, "$4.0000") || strings.Contains(text, "unknown") {
		t.Fatalf("costs with a price added:\n%s", text)
	}
	rows = nil
	if err := json.Unmarshal([]byte(mustRun(t, home, "costs", "--json")), &rows); err != nil || len(rows) != 1 || rows[0].Unpriced != 0 || rows[0].Cost != 4 {
		t.Fatalf("costs --json with a price: %+v %v", rows, err)
	}
	if show := mustRun(t, home, "sessions", "show", id); !strings.Contains(show, "cost $4.0000") {
		t.Fatalf("sessions show with a price:\n%s", show)
	}
	for _, args := range [][]string{{"sessions", "list"}, {"sessions", "tree", id}} {
		if out := mustRun(t, home, args...); !strings.Contains(out, "$4.0000") || strings.Contains(out, "unknown") {
			t.Fatalf("%v with a price:\n%s", args, out)
		}
	}
	srv.Add(llmtest.Reply{Content: "third"})
	_, errOut, _ = hermes(t, chatEnv(srv), "/usage\n", "--home", home, "chat", "--model", "local-llama", "--resume", id)
	if !strings.Contains(errOut, "$4.0000") || strings.Contains(errOut, "unknown") {
		t.Fatalf("/usage with a price:\n%s", errOut)
	}
}
