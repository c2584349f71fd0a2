package tui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"

	modelport "github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/llm/llmtest"
	"github.com/hermes-go/hermes/adapters/llm/openai"
	"github.com/hermes-go/hermes/schema"
)

// The history file keeps multi-line entries whole, in prompt_toolkit's
// layout, across loads; repeats and blank entries are not kept.
func TestHistoryFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history")
	h, err := LoadHistory(path)
	if err != nil || h.Len() != 0 {
		t.Fatalf("new history: %v %d", err, h.Len())
	}
	for _, e := range []string{"first", "line one\nline two", "line one\nline two", "  ", "/undo"} {
		if err := h.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "\n+line one\n+line two\n") || strings.Count(string(b), "+line one") != 1 {
		t.Fatalf("file:\n%s", b)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v: the history may hold secrets", fi.Mode())
	}
	again, err := LoadHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range again.Len() {
		got = append(got, again.At(i))
	}
	if strings.Join(got, "|") != "first|line one\nline two|/undo" {
		t.Fatalf("reloaded %q", got)
	}
	if i, ok := again.Search("LINE", again.Len()); !ok || i != 1 {
		t.Fatalf("search: %d %v", i, ok)
	}
	if i, ok := again.Search("i", 1); !ok || i != 0 {
		t.Fatalf("older match: %d %v", i, ok)
	}
	if _, ok := again.Search("nothing", again.Len()); ok {
		t.Fatal("found what is not there")
	}
}

// Streamed Markdown is printed block by block: up to the last blank line
// outside a code fence, never inside one.
func TestBlocks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		done   []string // what each chunk completes
		rest   string
	}{
		{"one paragraph", []string{"Hello ", "world"}, []string{"", ""}, "Hello world"},
		{"two paragraphs", []string{"First.\n", "\nSecond"}, []string{"", "First.\n\n"}, "Second"},
		{"blank line in a fence", []string{"```go\nfunc a() {}\n\nfunc b() {}\n", "```\n\nAfter"},
			[]string{"", "```go\nfunc a() {}\n\nfunc b() {}\n```\n\n"}, "After"},
		{"tilde fence", []string{"~~~\nx\n\ny\n~~~\n\n"}, []string{"~~~\nx\n\ny\n~~~\n\n"}, ""},
		{"partial last line", []string{"a\n\nb\n\nc"}, []string{"a\n\nb\n\n"}, "c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b blocks
			for i, c := range tc.chunks {
				if got := b.add(c); got != tc.done[i] {
					t.Fatalf("chunk %d completed %q, want %q", i, got, tc.done[i])
				}
			}
			if b.rest() != tc.rest || b.flush() != tc.rest || b.rest() != "" {
				t.Fatalf("rest %q", tc.rest)
			}
		})
	}
}

// Markdown is rendered with colours, or without any (NO_COLOR) but still
// laid out; blocks carry no padding lines.
func TestMarkdown(t *testing.T) {
	src := "# Plan\n\nSome **bold** text.\n\n- one\n- two\n"
	colour := (&markdown{profile: colorprofile.ANSI256}).render(src, 80, true)
	if !hasColour(colour) || strings.Contains(colour, "**") {
		t.Fatalf("colour rendering %q", colour)
	}
	plain := (&markdown{profile: colorprofile.ASCII}).render(src, 80, true)
	if hasColour(plain) || strings.Contains(plain, "**bold**") || !strings.Contains(plain, "\x1b[1mbold") || !strings.Contains(ansi.Strip(plain), "• one") {
		t.Fatalf("NO_COLOR rendering %q", plain)
	}
	for _, out := range []string{colour, plain} {
		lines := strings.Split(out, "\n")
		if strings.TrimSpace(ansi.Strip(lines[0])) == "" || strings.TrimSpace(ansi.Strip(lines[len(lines)-1])) == "" {
			t.Fatalf("padding lines left: %q", out)
		}
	}
	if got := (&markdown{}).render("  \n", 80, true); got != "" {
		t.Fatalf("blank text rendered as %q", got)
	}
}

// hasColour tells whether s sets a foreground or background colour.
func hasColour(s string) bool {
	for _, seq := range strings.Split(s, "\x1b[")[1:] {
		end := strings.IndexByte(seq, 'm')
		if end < 0 {
			continue
		}
		for _, p := range strings.Split(seq[:end], ";") {
			var n int
			if _, err := fmt.Sscan(p, &n); err == nil && (n >= 30 && n <= 49 || n >= 90 && n <= 107) {
				return true
			}
		}
	}
	return false
}

func TestArgsPreview(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{`{"command":"ls -la","timeout":30}`, "ls -la"},
		{`{"path":"notes.txt"}`, "notes.txt"},
		{`{"goal":"compute the answer","toolsets":["file"]}`, "compute the answer"},
		{`{"action":"add","target":"memory","content":"x"}`, "action=add"},
		{`{"b":2,"a":"x"}`, "a=x b=2"},
		{`{"code":"import os\nprint(1)"}`, "import os …"},
		{`not json`, "not json"},
		{`{"command":"` + strings.Repeat("x", 100) + `"}`, strings.Repeat("x", 19) + "…"},
	} {
		if got := argsPreview(tc.args, 20); got != tc.want {
			t.Errorf("argsPreview(%s) = %q, want %q", tc.args, got, tc.want)
		}
	}
	if d := duration(1500 * time.Millisecond); d != "1.5s" {
		t.Fatal(d)
	}
	if d := duration(65 * time.Second); d != "1m05s" {
		t.Fatal(d)
	}
}

// The status the ladder posts when it throws away a streamed partial
// answer is the one the screen recognises (it starts the answer again).
func TestDiscardedMatchesTheLadder(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "The capital of France", CutAfter: 2}, llmtest.Reply{Content: "Paris."})
	defer srv.Close()
	lad := &modelport.Ladder{Backoff: modelport.Backoff{Base: time.Millisecond}, Endpoints: []*modelport.Endpoint{{Name: "openai", Keys: []string{""},
		Build: func(key string) modelport.Provider { return openai.NewChat(openai.Options{BaseURL: srv.URL + "/v1"}) }}}}
	turn := lad.ForTurn()
	var mu sync.Mutex
	var statuses []string
	turn.Status = func(s string) {
		mu.Lock()
		statuses = append(statuses, s)
		mu.Unlock()
	}
	resp, err := turn.Complete(context.Background(), modelport.Request{Model: "m", Messages: []schema.Message{{Role: "user", Content: "capital?"}}}, func(modelport.Delta) {})
	if err != nil || resp.Content != "Paris." {
		t.Fatalf("%q %v", resp.Content, err)
	}
	mu.Lock()
	defer mu.Unlock()
	found := false
	for _, s := range statuses {
		found = found || discarded(s)
	}
	if !found {
		t.Fatalf("no status recognised as a discarded answer in %q", statuses)
	}
}

func TestUnderstood(t *testing.T) {
	q := tool.Question{Kind: "approval", Choices: []string{"once", "session", "always", "deny"}}
	for a, want := range map[string]bool{"once": true, "o": true, " Yes ": true, "n": true, "deny": true, "yse": false, "": false, "x": false} {
		if Understood(q, a) != want {
			t.Errorf("Understood(%q) = %v", a, !want)
		}
	}
	if !Understood(tool.Question{Kind: "clarify"}, "anything") {
		t.Error("a clarify question takes any answer")
	}
}
