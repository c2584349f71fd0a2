// Package tools is the tool registry: every tool with its toolset, and the
// selection that config makes of them (toolsets and single tools enabled or
// disabled, with wildcards). Only selected tools' schemas reach the model.
// The tools themselves live in the packages beside this one.
package tools

import (
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"sync"

	"github.com/hermes-go/hermes/actors/tool"
)

// Entry is one registered tool.
type Entry struct {
	Tool    tool.Tool
	Toolset string
}

// Registry holds every known tool: the fixed ones registered at start and
// the current tools of its sources (toolsets whose tools change while
// Hermes runs, see AddSource).
type Registry struct {
	mu      sync.RWMutex
	entries map[string]Entry
	needs   map[string][]string // tool → tools it is only on with
	sources []source
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{entries: map[string]Entry{}, needs: map[string][]string{}}
}

// Require makes tool available only where every one of needs is too,
// whatever the selection says: execute_code runs programs as the terminal
// does, so where the terminal is off, so is execute_code.
func (r *Registry) Require(tool string, needs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.needs[tool] = append(r.needs[tool], needs...)
}

// Close releases what tools hold beyond a call (the terminal's background
// processes, MCP servers): every tool and source that is an io.Closer is
// closed.
func (r *Registry) Close() error {
	var errs []error
	for _, e := range r.fixed() {
		if c, ok := e.Tool.(io.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close %s: %w", e.Tool.Spec().Name, err))
			}
		}
	}
	r.mu.RLock()
	srcs := append([]source(nil), r.sources...)
	r.mu.RUnlock()
	// Sources close at once: each may wait for a process to exit.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, s := range srcs {
		if c, ok := s.src.(io.Closer); ok {
			wg.Go(func() {
				if err := c.Close(); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("close toolset %s: %w", s.toolset, err))
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Register adds tools to a toolset; a name registered twice is an error
// (two tools must never answer to one name).
func (r *Registry) Register(toolset string, ts ...tool.Tool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range ts {
		name := t.Spec().Name
		if _, dup := r.entries[name]; dup {
			return fmt.Errorf("tool %q registered twice", name)
		}
		r.entries[name] = Entry{Tool: t, Toolset: toolset}
	}
	return nil
}

// All lists every registered tool, the sources' current ones included,
// sorted by toolset and name. A source's tool named like a fixed tool, or
// like a tool of a source added before it, is left out: a name answers to
// one tool only.
func (r *Registry) All() []Entry {
	out := r.fixed()
	r.mu.RLock()
	srcs := append([]source(nil), r.sources...)
	r.mu.RUnlock()
	if len(srcs) > 0 {
		taken := make(map[string]bool, len(out))
		for _, e := range out {
			taken[e.Tool.Spec().Name] = true
		}
		for _, s := range srcs {
			for _, t := range s.src.Tools() {
				if name := t.Spec().Name; !taken[name] {
					taken[name] = true
					out = append(out, Entry{Tool: t, Toolset: s.toolset})
				}
			}
		}
	}
	sortEntries(out)
	return out
}

// Toolsets are the toolsets of the tools named (those the registry holds),
// each once, sorted: what All's entries of those tools name, without
// building every tool's spec (a registered tool is found by its name; only
// names no registered tool has are looked for among the sources' tools).
func (r *Registry) Toolsets(names []string) []string {
	seen := map[string]bool{}
	var missing map[string]bool
	r.mu.RLock()
	for _, n := range names {
		if e, ok := r.entries[n]; ok {
			seen[e.Toolset] = true
		} else {
			if missing == nil {
				missing = map[string]bool{}
			}
			missing[n] = true
		}
	}
	var srcs []source
	if len(missing) > 0 {
		srcs = append(srcs, r.sources...)
	}
	r.mu.RUnlock()
	for _, s := range srcs {
		for _, t := range s.src.Tools() {
			if name := t.Spec().Name; missing[name] {
				delete(missing, name)
				seen[s.toolset] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for ts := range seen {
		out = append(out, ts)
	}
	sort.Strings(out)
	return out
}

// fixed lists the registered tools, without the sources'.
func (r *Registry) fixed() []Entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Entry, 0, len(r.entries))
	for _, e := range r.entries {
		out = append(out, e)
	}
	return out
}

func sortEntries(out []Entry) {
	sort.Slice(out, func(i, j int) bool {
		if out[i].Toolset != out[j].Toolset {
			return out[i].Toolset < out[j].Toolset
		}
		return out[i].Tool.Spec().Name < out[j].Tool.Spec().Name
	})
}

// Selection is the config's choice of tools. Patterns use path.Match
// wildcards ("web*", "*"). A tool is on when its toolset matches Toolsets
// (empty: all), its toolset matches no DisabledToolsets pattern, and its
// name matches no DisabledTools pattern — unless EnabledTools names it,
// which wins over everything.
type Selection struct {
	Toolsets         []string `yaml:"toolsets"`
	DisabledToolsets []string `yaml:"disabled_toolsets"`
	EnabledTools     []string `yaml:"enabled_tools"`
	DisabledTools    []string `yaml:"disabled_tools"`
}

// Validate reports malformed patterns, naming the key.
func (s Selection) Validate() error {
	for key, pats := range map[string][]string{"toolsets": s.Toolsets, "disabled_toolsets": s.DisabledToolsets,
		"enabled_tools": s.EnabledTools, "disabled_tools": s.DisabledTools} {
		for _, p := range pats {
			if _, err := path.Match(p, ""); err != nil {
				return fmt.Errorf("tools.%s: bad pattern %q: %v", key, p, err)
			}
		}
	}
	return nil
}

func matchAny(pats []string, s string) bool {
	for _, p := range pats {
		if ok, _ := path.Match(p, s); ok {
			return true
		}
	}
	return false
}

// Enabled reports whether e is on under s.
func (s Selection) Enabled(e Entry) bool {
	name := e.Tool.Spec().Name
	if matchAny(s.EnabledTools, name) {
		return true
	}
	if len(s.Toolsets) > 0 && !matchAny(s.Toolsets, e.Toolset) {
		return false
	}
	return !matchAny(s.DisabledToolsets, e.Toolset) && !matchAny(s.DisabledTools, name)
}

// On reports, by tool name, which tools are on under all of sels (a
// session's selection, narrowed for a subagent), with requirements applied.
func (r *Registry) On(sels ...Selection) map[string]bool {
	return r.on(r.All(), sels)
}

func (r *Registry) on(all []Entry, sels []Selection) map[string]bool {
	on := map[string]bool{}
	for _, e := range all {
		ok := true
		for _, s := range sels {
			ok = ok && s.Enabled(e)
		}
		on[e.Tool.Spec().Name] = ok
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for changed := true; changed; {
		changed = false
		for tool, needs := range r.needs {
			for _, n := range needs {
				if on[tool] && !on[n] {
					on[tool], changed = false, true
				}
			}
		}
	}
	return on
}

// Select returns the toolbox of the tools On under all of sels. It is
// live: a source's tools that come, go or change show in it from the next
// model call on (see Toolbox).
func (r *Registry) Select(sels ...Selection) *Toolbox {
	return &Toolbox{r: r, sels: append([]Selection(nil), sels...)}
}

// selectNow is the fixed toolbox of the tools On under sels right now.
func (r *Registry) selectNow(sels []Selection) *tool.Tools {
	all := r.All()
	on := r.on(all, sels)
	var ts []tool.Tool
	for _, e := range all {
		if on[e.Tool.Spec().Name] {
			ts = append(ts, e.Tool)
		}
	}
	return tool.NewTools(ts...)
}
