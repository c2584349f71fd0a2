// Package tools is the tool registry: every tool with its toolset, and the
// selection that config makes of them (toolsets and single tools enabled or
// disabled, with wildcards). Only selected tools' schemas reach the model.
// The tools themselves live in the packages beside this one.
package tools

import (
	"fmt"
	"path"
	"sort"

	"github.com/hermes-go/hermes/actors/agent"
)

// Entry is one registered tool.
type Entry struct {
	Tool    agent.Tool
	Toolset string
}

// Registry holds every known tool.
type Registry struct {
	entries map[string]Entry
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{entries: map[string]Entry{}} }

// Register adds tools to a toolset; a name registered twice is an error
// (two tools must never answer to one name).
func (r *Registry) Register(toolset string, ts ...agent.Tool) error {
	for _, t := range ts {
		name := t.Spec().Name
		if _, dup := r.entries[name]; dup {
			return fmt.Errorf("tool %q registered twice", name)
		}
		r.entries[name] = Entry{Tool: t, Toolset: toolset}
	}
	return nil
}

// All lists every registered tool sorted by toolset and name.
func (r *Registry) All() []Entry {
	out := make([]Entry, 0, len(r.entries))
	for _, e := range r.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Toolset != out[j].Toolset {
			return out[i].Toolset < out[j].Toolset
		}
		return out[i].Tool.Spec().Name < out[j].Tool.Spec().Name
	})
	return out
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

// Select returns the toolbox of the enabled tools.
func (r *Registry) Select(s Selection) *agent.Tools {
	var ts []agent.Tool
	for _, e := range r.All() {
		if s.Enabled(e) {
			ts = append(ts, e.Tool)
		}
	}
	return agent.NewTools(ts...)
}
