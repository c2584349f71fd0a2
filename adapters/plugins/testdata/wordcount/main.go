// Command wordcount is a Hermes plugin written in Go, the one the end-to-
// end tests build and install: an MCP server on stdio (the official Go
// SDK) with a tool for the model (word_count), a pre_tool_call hook that
// blocks terminal commands touching /etc/shadow (guard), a CLI command
// (stats), and two tools that misbehave on purpose (crash, hang) to show a
// plugin cannot take Hermes down. It also proves where it runs: probe
// reports whether it can read $HERMES_HOME and write its own directory.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var object = map[string]any{"type": "object"}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func args(req *mcp.CallToolRequest) map[string]any {
	var m map[string]any
	json.Unmarshal(req.Params.Arguments, &m)
	return m
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "wordcount", Version: "0.1.0"}, nil)
	s.AddTool(&mcp.Tool{Name: "word_count", Description: "Count the words of a text.", InputSchema: map[string]any{"type": "object",
		"properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []any{"text"}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			t, _ := args(req)["text"].(string)
			return text(fmt.Sprintf("%d words", len(strings.Fields(t)))), nil
		})
	// The hook: Hermes calls it with {"payload": <the hook's stdin>} and
	// reads its text as the hook's stdout.
	s.AddTool(&mcp.Tool{Name: "guard", Description: "pre_tool_call hook.", InputSchema: object},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			p, _ := args(req)["payload"].(map[string]any)
			in, _ := p["tool_input"].(map[string]any)
			if cmd, _ := in["command"].(string); strings.Contains(cmd, "/etc/shadow") {
				return text(`{"action": "block", "message": "the wordcount plugin keeps terminal away from /etc/shadow"}`), nil
			}
			return text(""), nil
		})
	s.AddTool(&mcp.Tool{Name: "stats", Description: "CLI command: count the words of the arguments.", InputSchema: object},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var words []string
			for _, a := range args(req)["args"].([]any) {
				words = append(words, strings.Fields(fmt.Sprint(a))...)
			}
			return text(fmt.Sprintf("%d words, %d characters", len(words), len(strings.Join(words, " ")))), nil
		})
	s.AddTool(&mcp.Tool{Name: "probe", Description: "Say what the sandbox lets this plugin do.", InputSchema: object},
		func(_ context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var out []string
			home := os.Getenv("PROBE_HOME")
			if _, err := os.ReadFile(filepath.Join(home, "config.yaml")); err != nil {
				out = append(out, "home hidden")
			} else {
				out = append(out, "home READABLE")
			}
			if err := os.WriteFile("written-by-plugin", []byte("x"), 0o644); err != nil {
				out = append(out, "own dir read-only")
			} else {
				out = append(out, "own dir WRITABLE")
			}
			if os.Getenv("OPENAI_API_KEY") == "" {
				out = append(out, "no key")
			} else {
				out = append(out, "KEY LEAKED")
			}
			return text(strings.Join(out, ", ")), nil
		})
	// The model provider (provider: plugin:wordcount): called with
	// {"request": <a chat.completions request>}, it answers a
	// chat.completion. It asks for word_count on the last user message,
	// then says what the tool found.
	s.AddTool(&mcp.Tool{Name: "complete", Description: "Model provider: a chat.completions call.", InputSchema: object},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				Request struct {
					Model    string `json:"model"`
					Messages []struct {
						Role    string `json:"role"`
						Content any    `json:"content"`
					} `json:"messages"`
				} `json:"request"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			msgs := in.Request.Messages
			last := msgs[len(msgs)-1]
			message := map[string]any{"role": "assistant"}
			finish := "stop"
			if last.Role == "tool" {
				message["content"] = fmt.Sprintf("the plugin's model (%s) read: %v", in.Request.Model, last.Content)
			} else {
				a, _ := json.Marshal(map[string]any{"text": fmt.Sprint(last.Content)})
				message["tool_calls"] = []any{map[string]any{"id": "wc1", "type": "function", "function": map[string]any{"name": "word_count", "arguments": string(a)}}}
				finish = "tool_calls"
			}
			out, _ := json.Marshal(map[string]any{"id": "wc", "object": "chat.completion", "model": in.Request.Model,
				"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish}},
				"usage":   map[string]any{"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}})
			return text(string(out)), nil
		})
	s.AddTool(&mcp.Tool{Name: "crash", Description: "Exit mid-call.", InputSchema: object},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			os.Exit(3)
			return nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "hang", Description: "Never answer.", InputSchema: object},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			time.Sleep(time.Hour)
			return nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
