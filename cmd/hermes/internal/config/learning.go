package config

import "github.com/hermes-go/hermes/adapters/tools/skills"

// SkillsConfig is the skills: section, with the Python Hermes Agent's
// keys: which skills are turned off, everywhere or on one platform, and
// the settings skills declare (skills.config.<key>, see
// skills.Skill.ConfigVars).
type SkillsConfig struct {
	Disabled         []string            `yaml:"disabled"`
	PlatformDisabled map[string][]string `yaml:"platform_disabled"`
	Config           map[string]any      `yaml:"config"`
}

// Where is where a chat on platform (cli for a terminal) offers skills,
// with the tools and toolsets its session has (both nil: not checked).
func (s SkillsConfig) Where(platform string, tools, toolsets []string) skills.Where {
	return skills.Where{Platform: platform, Tools: tools, Toolsets: toolsets, Disabled: s.Disabled, PlatformDisabled: s.PlatformDisabled}
}

// MemoryConfig is the memory: section, with the Python Hermes Agent's
// keys.
type MemoryConfig struct {
	// MemoryEnabled (default true) is memory itself: off, the memory tool
	// is not offered and the system prompt holds no memory.
	MemoryEnabled *bool `yaml:"memory_enabled"`
	// UserProfileEnabled (default true) is USER.md: off, the tool refuses
	// target=user and the prompt leaves the profile out.
	UserProfileEnabled *bool `yaml:"user_profile_enabled"`
	// WriteApproval (default false) is the review gate: on, what the agent
	// wants to remember waits for the person's approval (/memory).
	WriteApproval bool `yaml:"write_approval"`
}

// On says whether memory is on.
func (m MemoryConfig) On() bool { return m.MemoryEnabled == nil || *m.MemoryEnabled }

// UserOn says whether the user profile is on.
func (m MemoryConfig) UserOn() bool {
	return m.On() && (m.UserProfileEnabled == nil || *m.UserProfileEnabled)
}
