package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hermes-go/hermes/actors/command"
	"github.com/hermes-go/hermes/actors/gateway"
	"github.com/hermes-go/hermes/actors/prompt"
	"github.com/hermes-go/hermes/adapters/tools/skills"
	"github.com/hermes-go/hermes/cmd/hermes/internal/app"
	"github.com/hermes-go/hermes/cmd/hermes/internal/config"
)

// Using skills in a chat: the system prompt's index holds the skills
// offered where the session runs (skills.Where: its platform, the tools
// it has, config.yaml's skills.disabled and skills.platform_disabled),
// and /<skill-name> (or a bundle's name) loads skills into the turn.

// skillWhere is where a session of source (cli, telegram, ...) with the
// tools named offers skills. config.yaml is read again, so that a skill
// turned off meanwhile is off in the next session.
func (c *chatter) skillWhere(source string, tools []string) skills.Where {
	file := c.File
	if f, err := c.live.Load(c.App.Home); err == nil {
		file = f
	}
	var toolsets []string
	if c.Reg != nil {
		toolsets = c.Reg.Toolsets(tools)
	}
	return file.Skills.Where(first(source, "cli"), append([]string{}, tools...), toolsets)
}

// skillIndex is the skills the system prompt of a session of source with
// tools lists: those offered there.
func (c *chatter) skillIndex(source string, tools []string) []prompt.Skill {
	offered, _ := app.Library(c.App.Home, c.WD).Offered(c.skillWhere(source, tools))
	index := make([]prompt.Skill, 0, len(offered))
	for _, s := range offered {
		index = append(index, prompt.Skill{Name: s.Name, Description: s.Description})
	}
	return index
}

// invokeSkill builds the turn of "/name arg" typed in session id of
// source: skills.ErrNoSkill when name is no skill or bundle (an unknown
// command), a *skills.ExcludedError when the skill is not offered there.
func (c *chatter) invokeSkill(id, source, name, arg string) (skills.Invocation, error) {
	file := c.File
	if f, err := c.live.Load(c.App.Home); err == nil {
		file = f
	}
	in := skills.Invoker{Library: app.Library(c.App.Home, c.WD), BundlesDir: filepath.Join(c.App.Home, "skill-bundles"), Config: file.Skills.Config}
	return in.Invoke(c.skillWhere(source, c.Tools), id, strings.TrimPrefix(name, "/"), arg)
}

// loadedNote is the line a chat shows when a turn loads skills.
func loadedNote(inv skills.Invocation) string {
	what := "skill " + strings.Join(inv.Skills, ", ")
	if len(inv.Skills) > 1 {
		what = "skills " + strings.Join(inv.Skills, ", ")
	}
	if inv.Bundle != "" {
		what = fmt.Sprintf("bundle %s (%s)", inv.Bundle, strings.Join(inv.Skills, ", "))
	}
	note := "loaded " + what + " into this turn"
	if len(inv.Missing) > 0 {
		note += "; skipped (missing or not offered here): " + strings.Join(inv.Missing, ", ")
	}
	return note
}

// memoryConfig is config.yaml's memory section as it is now.
func (c *chatter) memoryConfig() config.MemoryConfig {
	if f, err := c.live.Load(c.App.Home); err == nil {
		return f.Memory
	}
	return c.File.Memory
}

// gatewaySkill is the gateway's skill commands (gateway.Config.Skill).
func (c *chatter) gatewaySkill(_ context.Context, platform, id, name, arg string) (gateway.SkillTurn, error) {
	inv, err := c.invokeSkill(id, platform, name, arg)
	if errors.Is(err, skills.ErrNoSkill) {
		return gateway.SkillTurn{}, gateway.ErrNotSkill
	}
	if err != nil {
		return gateway.SkillTurn{}, err
	}
	return gateway.SkillTurn{Text: inv.Text, Skills: inv.Skills}, nil
}

// gatewayMemory is the gateway's /memory (gateway.Config.Memory).
func (c *chatter) gatewayMemory(ctx context.Context, platform, arg string) (string, error) {
	return memoryCommand(ctx, c.App.Home, c.App.Store, platform, arg)
}

// gatewayInsights is the gateway's /insights (gateway.Config.Insights).
func (c *chatter) gatewayInsights(ctx context.Context, arg string) (string, error) {
	days, err := insightsArg(arg)
	if err != nil {
		return "", err
	}
	in, err := insightsOf(ctx, c.App, days, time.Now())
	if err != nil {
		return "", err
	}
	return in.String(), nil
}

// gatewayInfo is the gateway's /tools, /skills and /bundles
// (gateway.Config.Info): what a session of platform has.
func (c *chatter) gatewayInfo(_ context.Context, platform string, id command.ID, _ string) (string, error) {
	switch id {
	case command.Tools:
		return fmt.Sprintf("%d tools: %s", len(c.Tools), strings.Join(c.Tools, ", ")), nil
	case command.Skills:
		lib := app.Library(c.App.Home, c.WD)
		offered, _ := lib.Offered(c.skillWhere(platform, c.Tools))
		if len(offered) == 0 {
			return "No skills are offered here yet: hermes skills install PATH adds one, and the agent can write its own.", nil
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d skills (/NAME loads one into a turn):", len(offered))
		for _, s := range offered {
			name := s.Name
			if cat := lib.Category(s); cat != "" {
				name = cat + "/" + name
			}
			fmt.Fprintf(&b, "\n%s — %s", name, clip(s.Description, 80))
		}
		return b.String(), nil
	case command.Bundles:
		return bundlesText(c.App.Home), nil
	}
	return "", fmt.Errorf("%d is not a command gatewayInfo answers", id)
}

// bundlesText is /bundles: the skill bundles of home, each with its
// skills, and the files that are not bundles.
func bundlesText(home string) string {
	dir := filepath.Join(home, "skill-bundles")
	bundles, problems := skills.Bundles(dir)
	var b strings.Builder
	if len(bundles) == 0 {
		fmt.Fprintf(&b, "no skill bundles: a YAML file in %s (name, description, skills: [...], instruction) makes one, loaded with /NAME", dir)
	} else {
		fmt.Fprintf(&b, "%d skill bundles (/NAME loads one):", len(bundles))
		for _, key := range slices.Sorted(maps.Keys(bundles)) {
			bd := bundles[key]
			fmt.Fprintf(&b, "\n  /%s — %s", key, strings.Join(bd.Skills, ", "))
			if bd.Description != "" {
				fmt.Fprintf(&b, " (%s)", clip(bd.Description, 60))
			}
		}
	}
	for _, p := range problems {
		fmt.Fprintf(&b, "\n  not a bundle: %v", p)
	}
	return b.String()
}
