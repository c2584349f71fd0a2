package tools

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-go/hermes/actors/tool"
)

// changing is a Source whose tools a test sets.
type changing struct {
	mu    sync.Mutex
	tools []tool.Tool
	gen   atomic.Uint64
	ready chan struct{}
	n     int // closes
}

func (c *changing) set(names ...string) {
	c.mu.Lock()
	c.tools = nil
	for _, n := range names {
		c.tools = append(c.tools, named(n))
	}
	c.mu.Unlock()
	c.gen.Add(1)
}

func (c *changing) Tools() []tool.Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]tool.Tool(nil), c.tools...)
}
func (c *changing) Generation() uint64 { return c.gen.Load() }
func (c *changing) Wait() {
	if c.ready != nil {
		<-c.ready
	}
}
func (c *changing) Close() error { c.n++; return nil }

func TestToolboxFollowsSources(t *testing.T) {
	r := NewRegistry()
	r.Register("terminal", named("terminal"))
	gh := &changing{}
	if err := r.AddSource("mcp-github", gh); err != nil {
		t.Fatal(err)
	}
	if err := r.AddSource("mcp-github", gh); err == nil {
		t.Fatal("a toolset added twice was accepted")
	}
	box := r.Select(Selection{DisabledTools: []string{"mcp_github_delete_*"}})
	if got := fmt.Sprint(box.Names()); got != "[terminal]" {
		t.Fatalf("before the server connected: %s", got)
	}
	gh.set("mcp_github_list_issues", "mcp_github_delete_repo", "terminal")
	if got := fmt.Sprint(box.Names()); got != "[mcp_github_list_issues terminal]" {
		t.Fatalf("after: %s (the fixed terminal keeps its name, disabled_tools applies)", got)
	}
	if _, ok := box.Get("mcp_github_list_issues"); !ok {
		t.Fatal("Get misses a source's tool")
	}
	if e := r.All(); len(e) != 3 || e[0].Toolset != "mcp-github" {
		t.Fatalf("All: %+v", e)
	}
	gh.set("mcp_github_search")
	if got := fmt.Sprint(box.Names()); got != "[mcp_github_search terminal]" {
		t.Fatalf("after list_changed: %s", got)
	}
	if _, ok := box.Get("mcp_github_list_issues"); ok {
		t.Fatal("a tool the server dropped still answers")
	}
	only := r.Select(Selection{Toolsets: []string{"mcp-*"}})
	if got := fmt.Sprint(only.Names()); got != "[mcp_github_search]" {
		t.Fatalf("toolsets: [mcp-*] → %s", got)
	}
	if err := r.Close(); err != nil || gh.n != 1 {
		t.Fatalf("close: %v, source closed %d times", err, gh.n)
	}
}

func TestSpecsWaitForStartingSources(t *testing.T) {
	r := NewRegistry()
	src := &changing{ready: make(chan struct{})}
	r.AddSource("mcp-slow", src)
	box := r.Select()
	if n := len(box.Names()); n != 0 {
		t.Fatalf("Names waited or invented tools: %d", n)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		src.set("mcp_slow_x")
		close(src.ready)
	}()
	specs := box.Specs()
	if len(specs) != 1 || specs[0].Name != "mcp_slow_x" {
		t.Fatalf("Specs did not wait for the starting source: %+v", specs)
	}
}

func BenchmarkToolboxGet(b *testing.B) {
	r := NewRegistry()
	for i := range 40 {
		r.Register("set", named(fmt.Sprintf("tool_%d", i)))
	}
	src := &changing{}
	r.AddSource("mcp-x", src)
	src.set("mcp_x_a", "mcp_x_b")
	box := r.Select(Selection{DisabledTools: []string{"tool_3*"}})
	b.ResetTimer()
	for range b.N {
		if _, ok := box.Get("mcp_x_a"); !ok {
			b.Fatal("missing")
		}
	}
}
