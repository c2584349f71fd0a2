package skills

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// What a skill's frontmatter says about where it applies, as the Python
// Hermes Agent reads it:
//
//	platforms: [macos, linux]        # the operating systems it works on
//	environments: [docker]           # runtimes it is relevant to (kanban, docker, s6)
//	metadata:
//	  hermes:
//	    requires_toolsets: [web]     # offered only when these are on
//	    requires_tools: [browser_navigate]
//	    fallback_for_toolsets: [web] # offered only when these are off
//	    fallback_for_tools: [...]
//	    config:                      # settings it needs, under skills.config in config.yaml
//	      - key: wiki.path
//	        description: Where the wiki lives
//	        default: ~/wiki
//
// and config.yaml's skills.disabled and skills.platform_disabled.<platform>
// name skills the person turned off. A skill excluded where the chat runs
// is left out of the system prompt's index and skills_list, and /<name>
// does not load it (the answer says why).

// Where is where a skill would be offered: the chat and what its session
// has.
type Where struct {
	// OS is the operating system (runtime.GOOS when "").
	OS string
	// Platform is the chat's platform: cli, telegram, irc, ... (for
	// skills.platform_disabled).
	Platform string
	// Tools and Toolsets are those the session has; both nil: the
	// conditions on tools are not checked.
	Tools, Toolsets []string
	// Disabled is skills.disabled; PlatformDisabled is
	// skills.platform_disabled, by platform.
	Disabled         []string
	PlatformDisabled map[string][]string
	// Env says whether a runtime environment tag (kanban, docker, s6) is
	// active (nil: DetectEnvironment).
	Env func(tag string) bool
}

// osNames maps the frontmatter's platform names to runtime.GOOS.
var osNames = map[string]string{"macos": "darwin", "osx": "darwin", "darwin": "darwin", "linux": "linux", "windows": "windows", "win32": "windows"}

// DetectEnvironment says whether the runtime environment tag is active
// here: kanban (a kanban worker's HERMES_KANBAN_TASK or
// HERMES_KANBAN_BOARD is set), docker (inside a container), s6 (under
// s6-overlay). A tag it does not know is active: a skill is never hidden
// for a tag not understood.
func DetectEnvironment(tag string) bool {
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	switch tag {
	case "kanban":
		return os.Getenv("HERMES_KANBAN_TASK") != "" || os.Getenv("HERMES_KANBAN_BOARD") != ""
	case "docker":
		return exists("/.dockerenv") || exists("/run/.containerenv")
	case "s6":
		return exists("/run/s6") || exists("/package/admin/s6-overlay")
	}
	return true
}

// strs reads a frontmatter value that is a list of strings or one string.
func strs(v any) []string {
	switch x := v.(type) {
	case string:
		if s := strings.TrimSpace(x); s != "" {
			return []string{s}
		}
	case []any:
		var out []string
		for _, e := range x {
			if s := strings.TrimSpace(fmt.Sprint(e)); s != "" && e != nil {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// hermesMeta is the frontmatter's metadata.hermes mapping (nil: none).
func (s Skill) hermesMeta() map[string]any {
	md, _ := s.Meta["metadata"].(map[string]any)
	h, _ := md["hermes"].(map[string]any)
	return h
}

// Platforms are the operating systems the skill says it works on (none:
// all).
func (s Skill) Platforms() []string { return strs(s.Meta["platforms"]) }

// Conditions are the skill's metadata.hermes conditions on the session's
// tools, by key (requires_toolsets, requires_tools, fallback_for_toolsets,
// fallback_for_tools).
func (s Skill) Conditions() map[string][]string {
	h := s.hermesMeta()
	out := map[string][]string{}
	for _, k := range []string{"requires_toolsets", "requires_tools", "fallback_for_toolsets", "fallback_for_tools"} {
		if v := strs(h[k]); len(v) > 0 {
			out[k] = v
		}
	}
	return out
}

// Excluded says why s is not offered at w, "" when it is.
func (w Where) Excluded(s Skill) string {
	if ps := s.Platforms(); len(ps) > 0 {
		goos := w.OS
		if goos == "" {
			goos = runtime.GOOS
		}
		ok := false
		for _, p := range ps {
			p = strings.ToLower(p)
			if name, known := osNames[p]; known && name == goos || p == goos {
				ok = true
			}
		}
		if !ok {
			return fmt.Sprintf("it is for %s (platforms in its frontmatter), and this is %s", strings.Join(ps, ", "), goos)
		}
	}
	if envs := strs(s.Meta["environments"]); len(envs) > 0 {
		detect := w.Env
		if detect == nil {
			detect = DetectEnvironment
		}
		if !slices.ContainsFunc(envs, func(e string) bool { return detect(strings.ToLower(e)) }) {
			return fmt.Sprintf("it is relevant only in %s (environments in its frontmatter)", strings.Join(envs, ", "))
		}
	}
	if slices.Contains(w.Disabled, s.Name) {
		return "skills.disabled in config.yaml names it"
	}
	if w.Platform != "" && slices.Contains(w.PlatformDisabled[w.Platform], s.Name) {
		return fmt.Sprintf("skills.platform_disabled.%s in config.yaml names it", w.Platform)
	}
	if w.Tools == nil && w.Toolsets == nil {
		return ""
	}
	c := s.Conditions()
	for _, ts := range c["requires_toolsets"] {
		if !slices.Contains(w.Toolsets, ts) {
			return fmt.Sprintf("it needs the %s toolset, which is off here", ts)
		}
	}
	for _, t := range c["requires_tools"] {
		if !slices.Contains(w.Tools, t) {
			return fmt.Sprintf("it needs the %s tool, which is off here", t)
		}
	}
	for _, ts := range c["fallback_for_toolsets"] {
		if slices.Contains(w.Toolsets, ts) {
			return fmt.Sprintf("it stands in for the %s toolset, which is on here", ts)
		}
	}
	for _, t := range c["fallback_for_tools"] {
		if slices.Contains(w.Tools, t) {
			return fmt.Sprintf("it stands in for the %s tool, which is on here", t)
		}
	}
	return ""
}

// Offered lists the skills offered at w, and why each other one is not
// (by name).
func (l Library) Offered(w Where) (offered []Skill, excluded map[string]string) {
	all, _ := l.All()
	excluded = map[string]string{}
	for _, s := range all {
		if why := w.Excluded(s); why != "" {
			excluded[s.Name] = why
			continue
		}
		offered = append(offered, s)
	}
	return offered, excluded
}

// Category is the skill's category: the directories between the skills
// directory it is in and its own ("devops" for skills/devops/deploy-check),
// "" for a skill at the top.
func (l Library) Category(s Skill) string {
	for _, dir := range l.Dirs {
		rel, err := filepath.Rel(dir, filepath.Dir(s.Path))
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		if parent := filepath.Dir(rel); parent != "." {
			return filepath.ToSlash(parent)
		}
		return ""
	}
	return ""
}

// ConfigVar is a setting a skill declares (metadata.hermes.config), kept
// in config.yaml under skills.config.<Key>.
type ConfigVar struct {
	Key, Description, Prompt string
	Default                  any
}

// ConfigVars are the settings the skill declares; entries without a key
// or a description are skipped, as upstream does.
func (s Skill) ConfigVars() []ConfigVar {
	raw := s.hermesMeta()["config"]
	var items []any
	switch x := raw.(type) {
	case map[string]any:
		items = []any{x}
	case []any:
		items = x
	}
	var out []ConfigVar
	seen := map[string]bool{}
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		key := strings.TrimSpace(fmt.Sprint(m["key"]))
		desc := strings.TrimSpace(fmt.Sprint(m["description"]))
		if m["key"] == nil || m["description"] == nil || key == "" || desc == "" || seen[key] {
			continue
		}
		seen[key] = true
		v := ConfigVar{Key: key, Description: desc, Default: m["default"], Prompt: desc}
		if p, ok := m["prompt"].(string); ok && strings.TrimSpace(p) != "" {
			v.Prompt = strings.TrimSpace(p)
		}
		out = append(out, v)
	}
	return out
}

// ConfigValues resolves the skill's settings from cfg (config.yaml's
// skills.config mapping, nested by the keys' dots): the value set there,
// else the declared default; a ~ at the start of a string is the home
// directory.
func (s Skill) ConfigValues(cfg map[string]any) map[string]any {
	out := map[string]any{}
	for _, v := range s.ConfigVars() {
		val, ok := dotted(cfg, v.Key)
		if !ok || val == nil || fmt.Sprint(val) == "" {
			val = v.Default
		}
		if str, isStr := val.(string); isStr && strings.HasPrefix(str, "~") {
			if home, err := os.UserHomeDir(); err == nil {
				val = home + str[1:]
			}
		}
		if val == nil {
			val = ""
		}
		out[v.Key] = val
	}
	return out
}

// dotted looks a.b.c up in nested maps (or as a flat "a.b.c" key).
func dotted(m map[string]any, key string) (any, bool) {
	if v, ok := m[key]; ok {
		return v, true
	}
	cur := any(m)
	for _, part := range strings.Split(key, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}
