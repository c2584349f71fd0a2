// Command filechat is a Hermes plugin written in Go that serves a gateway
// platform, the one the end-to-end tests build and install: its "chat" is
// two files in the directory Hermes works in ($HERMES_WORKDIR), inbox.jsonl (people's messages, one
// JSON object per line, appended by the test) and outbox.jsonl (what
// Hermes sent). receive answers the messages not acknowledged yet
// (waiting for one up to wait_seconds); send appends to the outbox.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	mu    sync.Mutex
	acked = map[string]bool{}
	sent  int
)

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// pending are the inbox's messages not acknowledged yet.
func pending() []map[string]any {
	f, err := os.Open(filepath.Join(os.Getenv("HERMES_WORKDIR"), "inbox.jsonl"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if id, _ := m["message_id"].(string); !acked[id] {
			out = append(out, m)
		}
	}
	return out
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "filechat", Version: "0.1.0"}, nil)
	object := map[string]any{"type": "object"}
	s.AddTool(&mcp.Tool{Name: "receive", Description: "Gateway platform: the messages not acknowledged yet.", InputSchema: object},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				Ack  []string `json:"ack"`
				Wait int      `json:"wait_seconds"`
			}
			json.Unmarshal(req.Params.Arguments, &in)
			mu.Lock()
			for _, id := range in.Ack {
				acked[id] = true
			}
			mu.Unlock()
			deadline := time.Now().Add(time.Duration(in.Wait) * time.Second)
			for {
				mu.Lock()
				msgs := pending()
				mu.Unlock()
				if len(msgs) > 0 || time.Now().After(deadline) || ctx.Err() != nil {
					b, _ := json.Marshal(msgs)
					return text(string(b)), nil
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	s.AddTool(&mcp.Tool{Name: "send", Description: "Gateway platform: send a message.", InputSchema: object},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var m map[string]any
			json.Unmarshal(req.Params.Arguments, &m)
			mu.Lock()
			defer mu.Unlock()
			sent++
			m["id"] = fmt.Sprintf("out-%d", sent)
			f, err := os.OpenFile(filepath.Join(os.Getenv("HERMES_WORKDIR"), "outbox.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			b, _ := json.Marshal(m)
			if _, err := f.Write(append(b, '\n')); err != nil {
				return nil, err
			}
			return text(`{"ids": ["` + strings.ReplaceAll(m["id"].(string), `"`, "") + `"]}`), nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
