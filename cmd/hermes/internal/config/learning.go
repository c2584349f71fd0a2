package config

import (
	"time"

	"github.com/hermes-go/hermes/adapters/tools/skills"
)

// SkillsConfig is the skills: section, with the Python Hermes Agent's
// keys: which skills are turned off, everywhere or on one platform, and
// the settings skills declare (skills.config.<key>, see
// skills.Skill.ConfigVars).
type SkillsConfig struct {
	Disabled         []string            `yaml:"disabled"`
	PlatformDisabled map[string][]string `yaml:"platform_disabled"`
	Config           map[string]any      `yaml:"config"`
	// CreationNudgeInterval (upstream's key, default 10) is the
	// tool-calling steps since the last skill review (or skill_manage
	// call) after which a turn's end starts a background skill review;
	// 0 turns skill reviews off.
	CreationNudgeInterval *int `yaml:"creation_nudge_interval"`
	// BackgroundReview (default true) is the background review's off
	// switch, for skills and memory both.
	BackgroundReview *bool `yaml:"background_review"`
	// BackgroundReviewMaxSteps (default 8) bounds a review's model calls;
	// BackgroundReviewMaxCost (USD, default 0.25; 0: none) its spending.
	BackgroundReviewMaxSteps int      `yaml:"background_review_max_steps"`
	BackgroundReviewMaxCost  *float64 `yaml:"background_review_max_cost"`
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
	// NudgeInterval (upstream's key, default 10) is the user turns since
	// the last memory review (or memory call) after which a turn's end
	// starts a background memory review; 0 turns memory reviews off.
	NudgeInterval *int `yaml:"nudge_interval"`
}

// Review is the background review as configured (see actors/review).
type Review struct {
	// On is skills.background_review.
	On bool
	// SkillsAfter and MemoryAfter are the thresholds (0: that kind off).
	SkillsAfter, MemoryAfter int
	MaxSteps                 int
	MaxCost                  float64
	// Timeout is auxiliary.background_review.timeout (seconds upstream).
	Timeout time.Duration
}

// review resolves the background review's settings from c.
func (c Config) review() Review {
	r := Review{On: c.Skills.BackgroundReview == nil || *c.Skills.BackgroundReview, SkillsAfter: 10, MemoryAfter: 10,
		MaxSteps: c.Skills.BackgroundReviewMaxSteps, MaxCost: 0.25, Timeout: 2 * time.Minute}
	if v := c.Skills.CreationNudgeInterval; v != nil {
		r.SkillsAfter = *v
	}
	if v := c.Memory.NudgeInterval; v != nil {
		r.MemoryAfter = *v
	}
	if !c.Memory.On() {
		r.MemoryAfter = 0
	}
	if v := c.Skills.BackgroundReviewMaxCost; v != nil {
		r.MaxCost = *v
	}
	if r.MaxSteps == 0 {
		r.MaxSteps = 8
	}
	if t := c.Auxiliary.BackgroundReview.Timeout; t > 0 {
		r.Timeout = time.Duration(t * float64(time.Second))
	}
	if r.SkillsAfter == 0 && r.MemoryAfter == 0 {
		r.On = false
	}
	return r
}

// On says whether memory is on.
func (m MemoryConfig) On() bool { return m.MemoryEnabled == nil || *m.MemoryEnabled }

// UserOn says whether the user profile is on.
func (m MemoryConfig) UserOn() bool {
	return m.On() && (m.UserProfileEnabled == nil || *m.UserProfileEnabled)
}
