package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/adapters/mcp/mcptest"
)

// builtin is an in-process tool doing what the MCP echo tools do: the
// baseline of a tool call with no transport at all.
type builtin struct{}

func (builtin) Spec() model.ToolSpec { return model.ToolSpec{Name: "echo"} }
func (builtin) Flags() tool.Flags    { return tool.Flags{ReadOnly: true} }
func (builtin) Run(_ context.Context, args json.RawMessage) (string, error) {
	var in struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return "", err
	}
	return "echo: " + in.Text, nil
}

// BenchmarkToolCall compares one tool call through the path the agent
// loop takes (tool.RunTool, with its timeout and goroutine) for a
// built-in tool and for MCP tools over stdio and streamable HTTP: our
// fake server (Go SDK) and the reference server-everything (TypeScript
// SDK on node, skipped without HERMES_NODE_MODULES).
//
//	go test -run '^$' -bench ToolCall -benchtime 2s ./adapters/mcp/
func BenchmarkToolCall(b *testing.B) {
	bench := func(b *testing.B, tl tool.Tool, args string) {
		ctx := context.Background()
		call := tool.Call{ID: "c", Name: tl.Spec().Name, Args: json.RawMessage(args), Tool: tl}
		if r := tool.RunTool(ctx, call, time.Minute); r.Err != "" {
			b.Fatal(r.Err)
		}
		b.ResetTimer()
		for range b.N {
			if r := tool.RunTool(ctx, call, time.Minute); r.Err != "" {
				b.Fatal(r.Err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	}
	b.Run("builtin", func(b *testing.B) { bench(b, builtin{}, `{"text":"hi"}`) })
	b.Run("mcp-stdio-go", func(b *testing.B) {
		s := start(b, "fake", fake(mcptest.Basic), nil)
		bench(b, toolOf(b, s, "mcp_fake_echo"), `{"text":"hi"}`)
	})
	b.Run("mcp-http-go", func(b *testing.B) {
		s := start(b, "fake", ServerConfig{URL: mcptest.HTTP(b, mcptest.Basic)}, nil)
		bench(b, toolOf(b, s, "mcp_fake_echo"), `{"text":"hi"}`)
	})
	b.Run("mcp-stdio-node", func(b *testing.B) {
		script := mcptest.Reference(b, "server-everything")
		s := start(b, "everything", ServerConfig{Command: "node", Args: []string{script, "stdio"}}, nil)
		bench(b, toolOf(b, s, "mcp_everything_echo"), `{"message":"hi"}`)
	})
	b.Run("mcp-http-node", func(b *testing.B) {
		s := start(b, "everything", ServerConfig{URL: everythingHTTP(b, "streamableHttp") + "/mcp"}, nil)
		bench(b, toolOf(b, s, "mcp_everything_echo"), `{"message":"hi"}`)
	})
}

// BenchmarkStartup measures how long Hermes waits before its first
// prompt can list the tools of 5 configured stdio servers, started at
// once (one server alone is the baseline), then how long closing them
// takes (not in ns/op: reported as close-ms).
//
//	go test -run '^$' -bench Startup -benchtime 5x ./adapters/mcp/
func BenchmarkStartup(b *testing.B) {
	run := func(b *testing.B, n int, cfg func() ServerConfig) {
		cfgs := map[string]ServerConfig{}
		for i := range n {
			cfgs[fmt.Sprintf("s%d", i)] = cfg()
		}
		var closing time.Duration
		b.ResetTimer()
		for range b.N {
			m, err := NewManager(cfgs, &Options{})
			if err != nil {
				b.Fatal(err)
			}
			m.Start()
			m.Wait()
			b.StopTimer()
			for _, s := range m.Servers() {
				if st := s.Status(); st.State != Connected {
					b.Fatalf("%s: %+v", s.Name(), st)
				}
			}
			t0 := time.Now()
			m.Close()
			closing += time.Since(t0)
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms-to-tools")
		b.ReportMetric(float64(closing.Milliseconds())/float64(b.N), "close-ms")
	}
	goFake := func() ServerConfig { return fake(mcptest.Basic) }
	b.Run("go-1", func(b *testing.B) { run(b, 1, goFake) })
	b.Run("go-5", func(b *testing.B) { run(b, 5, goFake) })
	node := func(b *testing.B) func() ServerConfig {
		script := mcptest.Reference(b, "server-everything")
		return func() ServerConfig { return ServerConfig{Command: "node", Args: []string{script, "stdio"}} }
	}
	b.Run("node-1", func(b *testing.B) { run(b, 1, node(b)) })
	b.Run("node-5", func(b *testing.B) { run(b, 5, node(b)) })
	b.Run("node-5-filesystem", func(b *testing.B) {
		script := mcptest.Reference(b, "server-filesystem")
		dir := b.TempDir()
		os.WriteFile(filepath.Join(dir, "x"), nil, 0o644)
		run(b, 5, func() ServerConfig { return ServerConfig{Command: "node", Args: []string{script, dir}} })
	})
}
