package tools

import (
	"fmt"
	"sync"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
)

// Source is a toolset whose tools change while Hermes runs: an MCP
// server's tools arrive when it connects, and change when it says its
// list changed. Implementations are safe for concurrent use.
type Source interface {
	// Tools returns the toolset's tools as they are now.
	Tools() []tool.Tool
	// Generation changes whenever Tools would return something else.
	Generation() uint64
}

// Waiter is a Source that may still be starting: Wait returns once it is
// ready or has given up for now, never later than a deadline fixed when
// it started.
// A toolbox waits for its waiting sources before it tells the model what
// tools there are, so that the first prompt sees the tools of servers
// that connect in time.
type Waiter interface {
	Wait()
}

type source struct {
	toolset string
	src     Source
}

// AddSource adds a toolset whose tools src provides. Selections apply to
// its tools as to the others (toolsets: ["mcp-*"], disabled_tools:
// ["mcp_github_*"]), whenever they appear.
func (r *Registry) AddSource(toolset string, src Source) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sources {
		if s.toolset == toolset {
			return fmt.Errorf("toolset %q added twice", toolset)
		}
	}
	r.sources = append(r.sources, source{toolset: toolset, src: src})
	return nil
}

// generation sums the sources' generations: each only grows, so the sum
// changes whenever one of them does.
func (r *Registry) generation() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var g uint64
	for _, s := range r.sources {
		g += s.src.Generation()
	}
	return g
}

// Wait returns once every source that is still starting is ready or has
// reached its deadline. The deadlines run from each source's start, so
// waiting for them one after another takes no longer than the latest.
func (r *Registry) Wait() {
	r.mu.RLock()
	srcs := append([]source(nil), r.sources...)
	r.mu.RUnlock()
	for _, s := range srcs {
		if w, ok := s.src.(Waiter); ok {
			w.Wait()
		}
	}
}

// Toolbox is the tool.Toolbox of a selection. The agent loop asks it for
// the tool specs before each model call and for a tool at each call, so a
// toolbox that follows its registry's generation is all it takes for the
// tools of a source to change mid-session: no loop, session or actor
// knows. While no source changes, the selection computed last is reused.
type Toolbox struct {
	r    *Registry
	sels []Selection

	mu  sync.Mutex
	gen uint64
	cur *tool.Tools
}

func (t *Toolbox) current() *tool.Tools {
	g := t.r.generation() // read before building: a change during the build shows next time
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur == nil || g != t.gen {
		t.cur, t.gen = t.r.selectNow(t.sels), g
	}
	return t.cur
}

// Specs implements tool.Toolbox. It waits for sources still starting,
// each no longer than its own deadline.
func (t *Toolbox) Specs() []model.ToolSpec {
	t.r.Wait()
	return t.current().Specs()
}

// Get implements tool.Toolbox.
func (t *Toolbox) Get(name string) (tool.Tool, bool) { return t.current().Get(name) }

// Names implements tool.Toolbox. It does not wait for sources still
// starting: it names the tools there are now.
func (t *Toolbox) Names() []string { return t.current().Names() }
