// Package mcptest holds MCP servers for tests. They are fakes, our own
// programs, but they speak the real protocol through the official Go
// SDK's server side; they stand in for misbehaving third-party MCP
// servers that the reference servers (@modelcontextprotocol/server-
// everything and server-filesystem, which tests use where they can, see
// NodeModules) never imitate: one that crashes in the middle of a call,
// one that hangs in a call or in the handshake, one that writes a
// malformed message, one with 200 tools, one whose tool list changes.
//
// A test binary serves them on stdio when re-executed with EnvVar set
// (call MaybeServe first thing in TestMain), or over streamable HTTP in
// process (HTTP).
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Modes of the fake server.
const (
	// Basic has echo, add_tool (adds a tool: the peer is told its list
	// changed), fail (a result marked isError), odd_schema (a Pydantic-
	// style schema with $defs, a nullable union and a property name
	// Anthropic refuses; it echoes what it got), image, and a resource
	// and a prompt.
	Basic = "basic"
	// Crash has echo, and crash, which ends the process mid-call.
	Crash = "crash"
	// Hang has echo, and hang, which never answers and ignores
	// cancellation.
	Hang = "hang"
	// HangHandshake never answers at all.
	HangHandshake = "hang-handshake"
	// Malformed has echo, and garble, which writes a line that is not
	// JSON before answering.
	Malformed = "malformed"
	// Many has 200 tools, tool_000 … tool_199, listed 50 a page.
	Many = "many"
	// Exit writes to stderr and exits 3 at once.
	Exit = "exit"
)

// EnvVar names the mode in a re-executed test binary.
const EnvVar = "HERMES_MCPTEST_SERVER"

// MaybeServe serves the mode EnvVar names on stdio and exits, when set;
// otherwise it returns at once. Call it first in TestMain.
func MaybeServe() {
	mode := os.Getenv(EnvVar)
	if mode == "" {
		return
	}
	switch mode {
	case HangHandshake:
		io.Copy(io.Discard, os.Stdin) // read, never answer; go when stdin closes
		os.Exit(0)
	case Exit:
		fmt.Fprintln(os.Stderr, "fake MCP server: missing API key FAKE_TOKEN")
		os.Exit(3)
	}
	if err := NewServer(mode).Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "fake MCP server:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Command is how to start mode as a stdio server: this test binary, with
// EnvVar in its environment (the env to add to the server's config).
func Command(mode string) (command string, env map[string]string) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exe, map[string]string{EnvVar: mode}
}

// HTTP serves mode over streamable HTTP on loopback until the test ends
// and returns its URL.
func HTTP(t testing.TB, mode string) string {
	srv := NewServer(mode)
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

var object = map[string]any{"type": "object", "properties": map[string]any{}}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

func echo(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var in struct {
		Text string `json:"text"`
	}
	json.Unmarshal(req.Params.Arguments, &in)
	return text("echo: " + in.Text), nil
}

// NewServer returns the fake server of mode.
func NewServer(mode string) *sdk.Server {
	opts := &sdk.ServerOptions{}
	if mode == Many {
		opts.PageSize = 50
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "hermes-fake-" + mode, Version: "0.0.1"}, opts)
	s.AddTool(&sdk.Tool{Name: "echo", Description: "Echo the text back.", InputSchema: map[string]any{"type": "object",
		"properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []any{"text"}},
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, echo)
	switch mode {
	case Basic:
		var added sync.Mutex
		n := 0
		s.AddTool(&sdk.Tool{Name: "add_tool", Description: "Add a tool named extra_N.", InputSchema: object},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				added.Lock()
				n++
				name := fmt.Sprintf("extra_%d", n)
				added.Unlock()
				s.AddTool(&sdk.Tool{Name: name, Description: "An added tool.", InputSchema: object},
					func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
						return text(name + " ran"), nil
					})
				return text("added " + name), nil
			})
		s.AddTool(&sdk.Tool{Name: "fail", Description: "Always fails.", InputSchema: object},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "the disk is full"}}}, nil
			})
		s.AddTool(&sdk.Tool{Name: "odd_schema", Description: "Echo the arguments as JSON.", InputSchema: map[string]any{
			"type": "object",
			"$defs": map[string]any{"Point": map[string]any{"type": "object",
				"properties": map[string]any{"x": map[string]any{"type": "number"}, "y": map[string]any{"type": "number"}}, "required": []any{"x", "y"}}},
			"properties": map[string]any{
				"at":         map[string]any{"$ref": "#/$defs/Point", "default": nil},
				"label":      map[string]any{"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "null"}}, "default": nil},
				"bad key!":   map[string]any{"type": "string"},
				"tags":       map[string]any{"type": "array"},
				"undeclared": true,
			},
			"required": []any{"at", "missing"},
		}}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text(string(req.Params.Arguments)), nil
		})
		s.AddTool(&sdk.Tool{Name: "image", Description: "A 1x1 PNG and some structured content.", InputSchema: object},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.ImageContent{MIMEType: "image/png", Data: TinyPNG}},
					StructuredContent: map[string]any{"width": 1, "height": 1}}, nil
			})
		s.AddResource(&sdk.Resource{URI: "fake://notes/today", Name: "today", MIMEType: "text/plain", Description: "Today's notes"},
			func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
				return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "buy milk"}}}, nil
			})
		s.AddPrompt(&sdk.Prompt{Name: "greet", Description: "Greet someone.", Arguments: []*sdk.PromptArgument{{Name: "who", Required: true}}},
			func(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
				return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "Say hello to " + req.Params.Arguments["who"]}}}}, nil
			})
	case Crash:
		s.AddTool(&sdk.Tool{Name: "crash", Description: "Exits the server mid-call.", InputSchema: object},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				fmt.Fprintln(os.Stderr, "fake MCP server: segmentation fault (on purpose)")
				os.Exit(2)
				return nil, nil
			})
	case Hang:
		s.AddTool(&sdk.Tool{Name: "hang", Description: "Never answers.", InputSchema: object},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				select {}
			})
	case Malformed:
		s.AddTool(&sdk.Tool{Name: "garble", Description: "Writes a malformed message.", InputSchema: object},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				os.Stdout.WriteString("{\"jsonrpc\": \"2.0\", this is not JSON\n")
				return text("garbled"), nil
			})
	case Many:
		for i := range 200 {
			name := fmt.Sprintf("tool_%03d", i)
			s.AddTool(&sdk.Tool{Name: name, Description: fmt.Sprintf("Tool number %d.", i), InputSchema: map[string]any{"type": "object",
				"properties": map[string]any{"n": map[string]any{"type": "integer"}}}},
				func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					return text(name + " got " + strings.TrimSpace(string(req.Params.Arguments))), nil
				})
		}
	}
	return s
}

// TinyPNG is a 1x1 PNG.
var TinyPNG = []byte{0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x01,
	0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78,
	0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0, 0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
	0x4e, 0x44, 0xae, 0x42, 0x60, 0x82}

// NodeModulesEnv names the variable pointing at the node_modules that
// .ci/run installs the reference MCP servers and the TypeScript SDK
// into (.ci/node/node_modules).
const NodeModulesEnv = "HERMES_NODE_MODULES"

// NodeModules returns that directory, or skips the test saying why.
func NodeModules(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(NodeModulesEnv)
	if dir == "" {
		t.Skipf("%s is not set: the reference MCP servers are not installed (bash .ci/run installs them into .ci/node/node_modules)", NodeModulesEnv)
	}
	if _, err := os.Stat(filepath.Join(dir, "@modelcontextprotocol")); err != nil {
		t.Skipf("%s=%s holds no @modelcontextprotocol packages: run npm ci --prefix .ci/node", NodeModulesEnv, dir)
	}
	return dir
}

// Reference returns the node script of a reference server package
// (server-everything, server-filesystem) in NodeModules, skipping the
// test when it is not installed.
func Reference(t testing.TB, pkg string) string {
	t.Helper()
	script := filepath.Join(NodeModules(t), "@modelcontextprotocol", pkg, "dist", "index.js")
	if _, err := os.Stat(script); err != nil {
		t.Skipf("%s is not installed: %v", pkg, err)
	}
	return script
}
