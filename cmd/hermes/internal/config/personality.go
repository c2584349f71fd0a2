package config

import (
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Personality is an entry of agent.personalities, in either of Hermes'
// forms: the prompt alone, or a mapping of system_prompt, tone, style and
// description.
type Personality struct {
	SystemPrompt string `yaml:"system_prompt"`
	Tone         string `yaml:"tone"`
	Style        string `yaml:"style"`
	Description  string `yaml:"description"`
}

// UnmarshalYAML accepts both forms.
func (p *Personality) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		p.SystemPrompt = n.Value
		return nil
	}
	type plain Personality
	return n.Decode((*plain)(p))
}

// Prompt is what the model is told: the prompt, then the tone and style.
func (p Personality) Prompt() string {
	parts := []string{p.SystemPrompt}
	if p.Tone != "" {
		parts = append(parts, "Tone: "+p.Tone)
	}
	if p.Style != "" {
		parts = append(parts, "Style: "+p.Style)
	}
	return strings.TrimSpace(strings.Join(parts, "\n"))
}

// Summary is the personality in a line: its description, else its prompt.
func (p Personality) Summary() string {
	if p.Description != "" {
		return p.Description
	}
	return p.Prompt()
}

// builtinPersonalities are offered when config.yaml names none.
var builtinPersonalities = map[string]Personality{
	"concise":   {SystemPrompt: "Answer briefly: the answer first, no preamble, no recap."},
	"technical": {SystemPrompt: "Answer as a senior engineer would: precise terms, the details that matter, and the trade-offs."},
	"teacher":   {SystemPrompt: "Explain step by step, with a small example, and check the idea before moving on."},
	"creative":  {SystemPrompt: "Offer unexpected angles and several options before settling on one."},
}

// Personalities are agent.personalities, or the built-in few when the
// file names none.
func (c Config) Personalities() map[string]Personality {
	if len(c.Agent.Personalities) > 0 {
		return c.Agent.Personalities
	}
	return builtinPersonalities
}

// PersonalityNames are the names of Personalities, sorted.
func (c Config) PersonalityNames() []string {
	var names []string
	for n := range c.Personalities() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
