package config

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hermes-go/hermes/internal/typo"
)

// How config.yaml's keys are checked: inside a section this build reads
// (agent, tools, terminal, compression, ...) every key must be one it
// knows (or the Python agent's, below), or hermes refuses to start,
// naming the key and the nearest known one: a misspelt key silently keeps its default, and for keys such as
// tools.disabled_tools that default is the less safe one. A top-level key
// this build does not know is refused the same way when it looks like a
// known key or names a key of a section (disabled_tools: at the top
// instead of under tools:). A key of the Python Hermes Agent's config
// (python_keys.go, generated from its package) that this build has no use
// for is ignored, with one warning naming them all, so that one
// config.yaml serves both; a key neither has is refused.
//
//go:generate sh -c "$HERMES_AGENT_VENV/bin/python testdata/python_keys.py | gofmt > python_keys.go"

// mapKeys are the keys of a section held as a plain map (nil: any).
func mapKeys(section string) []string {
	switch section {
	case "terminal":
		return []string{"backend", "cwd", "docker_image", "env_passthrough", "ssh_host", "ssh_key", "ssh_port", "ssh_user", "timeout"}
	}
	return nil
}

// keyProblem is one key of config.yaml that is not right.
type keyProblem struct {
	line int
	msg  string
}

// keyCheck walks a config.yaml document beside the Config type.
type keyCheck struct {
	problems []keyProblem
	ignored  []string
	// set holds the keys present in the file (dotted paths).
	set map[string]bool
}

func checkKeys(doc *yaml.Node) *keyCheck {
	k := &keyCheck{set: map[string]bool{}}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		k.walk(doc.Content[0], reflect.TypeOf(Config{}), "")
	}
	return k
}

func (k *keyCheck) walk(n *yaml.Node, t reflect.Type, path string) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		fields := fieldsOf(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			p := join(path, key.Value)
			ft, ok := fields[key.Value]
			if !ok {
				k.unknown(key, p, path, names(fields))
				continue
			}
			k.set[p] = true
			k.walk(val, ft, p)
		}
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		known := mapKeys(path)
		fixed := known != nil
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			p := join(path, key.Value)
			if fixed && !slices.Contains(known, key.Value) {
				k.unknown(key, p, path, known)
				continue
			}
			k.set[p] = true
			k.walk(val, t.Elem(), p)
		}
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, v := range n.Content {
			k.walk(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	}
}

// unknown records key p, not one of known (the keys of section): a key
// of the Python agent's config is ignored (and warned about), any other
// is refused. A key the Python agent's list names is its; one it does
// not name but that falls below a key whose contents it leaves open
// (model:, fallback_providers:) is its too, unless it looks like a
// misspelling of a key of this build.
func (k *keyCheck) unknown(key *yaml.Node, p, section string, known []string) {
	exact, open := pythonKey(p)
	if exact || open && nearest(key.Value, known) == "" {
		k.ignored = append(k.ignored, p)
		return
	}
	if section != "" {
		msg := "unknown key " + p
		if s := nearest(key.Value, known); s != "" {
			msg += ": did you mean " + join(section, s) + "?"
		} else {
			msg += "; the keys of " + section + " are " + strings.Join(known, ", ")
		}
		k.problems = append(k.problems, keyProblem{key.Line, msg})
		return
	}
	if s := nearest(key.Value, known); s != "" {
		k.problems = append(k.problems, keyProblem{key.Line, fmt.Sprintf("unknown key %s: did you mean %s?", p, s)})
		return
	}
	if s := sectionKey(key.Value); s != "" {
		k.problems = append(k.problems, keyProblem{key.Line, fmt.Sprintf("unknown key %s: did you mean %s (under %s:)?", p, s, strings.Split(s, ".")[0])})
		return
	}
	k.problems = append(k.problems, keyProblem{key.Line, fmt.Sprintf("unknown key %s: neither this build nor the Python Hermes Agent %s has it", p, pythonAgentVersion)})
}

// pythonKey says whether dotted key p (list indexes dropped) is one the
// Python Hermes Agent's config names (exact), or falls below one whose
// contents it leaves open (see python_keys.go).
func pythonKey(p string) (exact, open bool) {
	p = listIndex.ReplaceAllString(p, "")
	if _, ok := pythonKeys[p]; ok {
		return true, false
	}
	for i := range len(p) {
		if p[i] == '.' && pythonKeys[p[:i]] {
			return false, true
		}
	}
	return false, false
}

var listIndex = regexp.MustCompile(`\[\d+\]`)

// sectionKey finds name (or a near miss) among the keys one level down:
// a key written at the top instead of in its section.
func sectionKey(name string) string {
	var all []string
	for sec, ft := range fieldsOf(reflect.TypeOf(Config{})) {
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		var keys []string
		if ft.Kind() == reflect.Struct {
			keys = names(fieldsOf(ft))
		}
		keys = append(keys, mapKeys(sec)...)
		for _, key := range keys {
			all = append(all, sec+"."+key)
		}
	}
	sort.Strings(all)
	best, bestD := "", 1<<30
	for _, full := range all {
		_, key, _ := strings.Cut(full, ".")
		if d := typo.Distance(name, key); d < bestD && d <= tolerance(name) {
			best, bestD = full, d
		}
	}
	return best
}

// fieldsOf maps the yaml keys of struct type t to their field types.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			for k, v := range fieldsOf(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

func names(m map[string]reflect.Type) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// nearest is the known key closest to key, if it is close enough to be
// what was meant.
func nearest(key string, known []string) string {
	best, bestD := "", 1<<30
	for _, k := range known {
		if d := typo.Distance(key, k); d < bestD && d <= tolerance(key) {
			best, bestD = k, d
		}
	}
	return best
}

func tolerance(key string) int { return max(2, len(key)/4) }

// checkValues reports values out of their range, naming the key; set
// tells keys written in the file from those left at their zero value.
func checkValues(c Config, set map[string]bool) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if _, err := ParseStore(c.Store); err != nil {
		bad("store: %v", err)
	}
	if c.ContextWindow < 0 {
		bad("context_window must be 0 (the model's known window) or a number of tokens, got %d", c.ContextWindow)
	}
	if set["agent.max_turns"] && c.Agent.MaxTurns <= 0 {
		bad("agent.max_turns must be at least 1, got %d", c.Agent.MaxTurns)
	}
	if set["agent.max_parallel_tools"] && c.Agent.MaxParallelTools <= 0 {
		bad("agent.max_parallel_tools must be at least 1, got %d", c.Agent.MaxParallelTools)
	}
	if c.Agent.MaxTokens < 0 {
		bad("agent.max_tokens must be 0 (the provider's default) or more, got %d", c.Agent.MaxTokens)
	}
	for key, v := range map[string]float64{"compression.threshold": c.Compression.Threshold, "compression.target_ratio": c.Compression.TargetRatio} {
		if set[key] && (v <= 0 || v > 1) {
			bad("%s must be a fraction above 0 and at most 1, got %g", key, v)
		}
	}
	for key, v := range map[string]int{"compression.protect_first_n": c.Compression.ProtectFirstN, "compression.protect_last_n": c.Compression.ProtectLastN,
		"delegation.max_depth": c.Delegation.MaxDepth, "delegation.max_concurrent": c.Delegation.MaxConcurrent,
		"delegation.max_per_response": c.Delegation.MaxPerResponse} {
		if v < 0 {
			bad("%s must not be negative, got %d", key, v)
		}
	}
	for key, v := range map[string]float64{"budget.max_cost_per_session": c.Budget.MaxCostPerSession, "budget.max_cost_per_day": c.Budget.MaxCostPerDay} {
		if v < 0 {
			bad("%s must not be negative (0: no cap), got %g", key, v)
		}
	}
	for model, p := range c.Prices {
		if p.Input < 0 || p.Output < 0 || p.CacheRead < 0 || p.CacheWrite < 0 {
			bad("prices.%s: prices must not be negative", model)
		}
	}
	if v, ok := c.Terminal["ssh_port"]; ok {
		if port, isInt := v.(int); !isInt || port < 1 || port > 65535 {
			bad("terminal.ssh_port must be a port number, got %v", v)
		}
	}
	sort.Strings(out)
	return out
}
