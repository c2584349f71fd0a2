package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-go/hermes/adapters/llm/llmtest"
)

// TestConfigKeysAndRanges: a misspelt key (in a section, or a section's key
// written at the top) and a value out of range stop hermes before it does
// anything, naming the key, its line and what was meant; a section this
// build does not use is ignored with a warning.
func TestConfigKeysAndRanges(t *testing.T) {
	srv := llmtest.New()
	srv.SetDefault(llmtest.Reply{Content: "ok"})
	defer srv.Close()
	cases := []struct {
		name, yaml string
		want       []string // on stderr; none: hermes runs
	}{
		{"typo in a security key", "model: m\ntools:\n  disabled_tool: [terminal]\n",
			[]string{"line 3: unknown key tools.disabled_tool: did you mean tools.disabled_tools?"}},
		{"a section's key at the top", "model: m\ndisabled_tools: [terminal]\n",
			[]string{"line 2: unknown key disabled_tools: did you mean tools.disabled_tools (under tools:)?"}},
		{"near miss at the top", "model: m\ncommand_alowlist: [x]\n", []string{"did you mean command_allowlist?"}},
		{"typo in a map section", "model: m\nterminal:\n  tiemout: 5\n", []string{"unknown key terminal.tiemout: did you mean terminal.timeout?"}},
		{"nothing near", "model: m\nagent:\n  frobnicate: 1\n", []string{"unknown key agent.frobnicate; the keys of agent are budget_warning_at, first_byte_timeout, max_parallel_tools, max_tokens, max_turns, model_call_timeout, personalities, tool_timeout"}},
		{"in a list", "model: m\nfallback_providers:\n  - {provider: x, modle: y}\n", []string{"unknown key fallback_providers[0].modle: did you mean fallback_providers[0].model?"}},
		{"negative context window", "model: m\ncontext_window: -100\n", []string{"context_window must be 0"}},
		{"threshold zero", "model: m\ncompression:\n  threshold: 0\n", []string{"compression.threshold must be a fraction above 0 and at most 1, got 0"}},
		{"threshold over one", "model: m\ncompression:\n  target_ratio: 1.5\n", []string{"compression.target_ratio must be a fraction above 0 and at most 1, got 1.5"}},
		{"max_turns zero", "model: m\nagent:\n  max_turns: 0\n", []string{"agent.max_turns must be at least 1, got 0"}},
		{"every problem at once", "model: m\ncontext_window: -1\nbudget:\n  max_cost_per_day: -2\ndelegation:\n  max_depth: -1\n",
			[]string{"context_window must be 0", "budget.max_cost_per_day must not be negative", "delegation.max_depth must not be negative"}},
		{"typo in the sandbox", "model: m\nsandbox:\n  mdoe: read-only\n", []string{"did you mean sandbox.mode?"}},
		{"unknown sandbox mode", "model: m\nsandbox:\n  mode: open\n", []string{`sandbox.mode: sandbox mode "open": use read-only, workspace-write or full-access`}},
		{"allow without hosts", "model: m\nsandbox:\n  network: allow\n", []string{"sandbox.network is allow but sandbox.network_allow is empty"}},
		{"a relative writable root", "model: m\nsandbox:\n  writable_roots: [build]\n", []string{`sandbox.writable_roots: "build" is not an absolute path`}},
		{"a section of the Python agent", "model: m\ndisplay:\n  skin: mono\n", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			os.WriteFile(filepath.Join(home, "config.yaml"), []byte(c.yaml), 0o600)
			out, errOut, code := hermes(t, chatEnv(srv), "", "--home", home, "chat", "-q", "hi")
			if c.want == nil {
				if code != 0 || out != "ok\n" || !strings.Contains(errOut, "ignoring 1 key(s) of the Python Hermes Agent this build has no use for: display") {
					t.Fatalf("exit %d stdout %q stderr:\n%s", code, out, errOut)
				}
				return
			}
			if code == 0 || out != "" {
				t.Fatalf("hermes ran with a bad config: stdout %q stderr:\n%s", out, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) || !strings.Contains(errOut, "config.yaml") {
					t.Fatalf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
	// Every command that reads the config checks it.
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("tools:\n  disabled_tool: [terminal]\n"), 0o600)
	if _, errOut, err := run(t, home, "tools", "list"); err == nil || !strings.Contains(errOut, "did you mean tools.disabled_tools?") {
		t.Fatalf("tools list with a misspelt key: %v\n%s", err, errOut)
	}
}
