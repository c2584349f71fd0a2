package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/hermes-go/hermes/adapters/hooks"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

func hooksCmd(g *app.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "hooks", Short: "Shell hooks (hooks: in config.yaml): list them, fire one with a sample payload, check them, revoke an approval"}
	cmd.AddCommand(hooksListCmd(g), hooksTestCmd(g), hooksDoctorCmd(g), hooksRevokeCmd(g))
	return cmd
}

// hooksSetup is what the hooks commands read: the home, config.yaml's
// hooks (validated) and the consent allowlist.
func hooksSetup(g *app.Factory) (string, config.Config, *hooks.Consent, error) {
	home, err := g.ResolveHome()
	if err != nil {
		return "", config.Config{}, nil, err
	}
	c, err := config.Load(home)
	if err != nil {
		return "", config.Config{}, nil, err
	}
	if _, err := c.Hooks.Validate(); err != nil {
		return "", config.Config{}, nil, fmt.Errorf("%s: %w", filepath.Join(home, "config.yaml"), err)
	}
	return home, c, &hooks.Consent{Path: filepath.Join(home, hooks.AllowlistFile)}, nil
}

// samplePayloads are the extra fields `hermes hooks test` and `doctor`
// fire each event with, shaped as the real firings make them.
var samplePayloads = map[string]map[string]any{
	hooks.PreToolCall:  {"tool_input": map[string]any{"command": "echo hello"}, "turn_id": "test-turn", "task_id": ""},
	hooks.PostToolCall: {"tool_input": map[string]any{"command": "echo hello"}, "turn_id": "test-turn", "task_id": "", "result": "hello\n[exit code: 0]", "status": "ok", "error_message": nil, "duration_ms": 42},
	hooks.TransformToolResult: {"tool_input": map[string]any{"command": "echo hello"}, "turn_id": "test-turn", "task_id": "", "result": "hello\n[exit code: 0]",
		"status": "ok", "error_message": nil, "duration_ms": 42},
	hooks.TransformTerminalOutput: {"command": "echo hello", "output": "hello", "returncode": 0, "task_id": "", "env_type": "local"},
	hooks.TransformLLMOutput:      {"response_text": "All done.", "model": "gpt-4o", "platform": "cli"},
	hooks.PreLLMCall:              {"turn_id": "test-turn", "task_id": "", "user_message": "What is the weather?", "is_first_turn": true, "model": "gpt-4o", "platform": "cli", "sender_id": ""},
	hooks.PostLLMCall:             {"turn_id": "test-turn", "task_id": "", "assistant_response": "Sunny.", "model": "gpt-4o", "platform": "cli"},
	hooks.PreAPIRequest: {"turn_id": "test-turn", "task_id": "", "platform": "cli", "model": "gpt-4o", "provider": "openai", "api_mode": "chat_completions",
		"api_call_count": 1, "message_count": 4, "tool_count": 12, "approx_input_tokens": 2048, "request_char_count": 8192, "max_tokens": 4096},
	hooks.PostAPIRequest: {"turn_id": "test-turn", "task_id": "", "platform": "cli", "model": "gpt-4o", "provider": "openai", "api_mode": "chat_completions",
		"api_call_count": 1, "api_duration": 1.234, "finish_reason": "stop", "message_count": 4, "response_model": "gpt-4o",
		"usage": map[string]any{"input_tokens": 2048, "output_tokens": 512}, "assistant_content_chars": 1200, "assistant_tool_call_count": 0},
	hooks.APIRequestError:   {"turn_id": "test-turn", "task_id": "", "platform": "cli", "model": "gpt-4o", "provider": "openai", "error": "openai: 429 rate limited"},
	hooks.OnSessionStart:    {"model": "gpt-4o", "platform": "cli"},
	hooks.OnSessionEnd:      {"turn_id": "test-turn", "task_id": "", "completed": true, "interrupted": false, "model": "gpt-4o", "platform": "cli"},
	hooks.OnSessionFinalize: {"platform": "cli", "reason": "shutdown"},
	hooks.OnSessionReset:    {"platform": "cli", "previous_session_id": "previous-session"},
	hooks.SubagentStart:     {"parent_session_id": "test-session", "child_session_id": "child-session", "child_goal": "count to 3", "child_depth": 1, "child_role": nil},
	hooks.SubagentStop: {"parent_session_id": "test-session", "child_session_id": "child-session", "child_role": nil, "child_summary": "Synthetic summary for hooks test",
		"child_status": "completed", "duration_ms": 1234},
}
