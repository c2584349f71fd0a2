// Package prompt assembles the stable prefix of a session: identity, tool
// guidance, the memory snapshot, the skills index and the context files of
// the working directory. It is built once when a session starts and stored
// as an event, so every call of the session sends the same bytes and
// provider prompt caches hit.
package prompt

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// DefaultIdentity is used when $HERMES_HOME/SOUL.md does not exist.
const DefaultIdentity = `You are Hermes, a capable AI agent. You help the user by thinking step by step and using the tools available to you. You are direct and concise; you do the work rather than describing it.`

const toolGuidance = `## Using tools
- Use tools to act and to find facts instead of guessing; read before you edit.
- Independent tool calls may be made together in one response; they run in parallel.
- When a tool fails, read the error, fix the call and try again, or explain what blocks you.
- When the task is done, answer with a short summary of what you did and what you found.`

// maxContextFile bounds each context file copied into the prompt.
const maxContextFile = 20000

// Skill is one entry of the skills index.
type Skill struct {
	Name        string
	Description string
}

// Options are the parts of the prompt.
type Options struct {
	Home       string // $HERMES_HOME: SOUL.md, memories/
	WorkingDir string
	ToolNames  []string
	Skills     []Skill
	Now        time.Time
	// NoMemory leaves MEMORY.md and USER.md out (memory.memory_enabled
	// false), NoUserProfile USER.md (memory.user_profile_enabled false).
	NoMemory, NoUserProfile bool
}

// contextFiles are read from the working directory, in this order.
var contextFiles = []string{"AGENTS.md", "HERMES.md", ".hermes.md"}

// Build returns the system prompt.
func Build(o Options) string {
	var b strings.Builder
	identity := DefaultIdentity
	if soul, err := os.ReadFile(filepath.Join(o.Home, "SOUL.md")); err == nil && strings.TrimSpace(string(soul)) != "" {
		identity = strings.TrimSpace(string(soul))
	}
	b.WriteString(identity)
	if len(o.ToolNames) > 0 {
		b.WriteString("\n\n" + toolGuidance)
	}
	if mem := memorySnapshot(o.Home, o.NoUserProfile); mem != "" && !o.NoMemory {
		b.WriteString("\n\n## Memory (a snapshot taken when this session started)\n")
		b.WriteString(mem)
	}
	if len(o.Skills) > 0 {
		skills := append([]Skill(nil), o.Skills...)
		sort.Slice(skills, func(i, j int) bool { return skills[i].Name < skills[j].Name })
		b.WriteString("\n\n## Skills (load one with skill_view before following it)\n")
		for _, s := range skills {
			fmt.Fprintf(&b, "- %s: %s\n", s.Name, s.Description)
		}
	}
	for _, name := range contextFiles {
		data, err := os.ReadFile(filepath.Join(o.WorkingDir, name))
		if err != nil || len(strings.TrimSpace(string(data))) == 0 {
			continue
		}
		text := string(data)
		if len(text) > maxContextFile {
			text = text[:maxContextFile] + "\n[… truncated]"
		}
		fmt.Fprintf(&b, "\n\n## Project context from %s\n%s", name, strings.TrimSpace(text))
	}
	if o.WorkingDir != "" {
		fmt.Fprintf(&b, "\n\nWorking directory: %s", o.WorkingDir)
	}
	if !o.Now.IsZero() {
		fmt.Fprintf(&b, "\nSession started: %s", o.Now.Format("Monday, 2 January 2006"))
	}
	return b.String()
}

// memorySnapshot is MEMORY.md and USER.md as they are now.
func memorySnapshot(home string, noUser bool) string {
	var parts []string
	for _, f := range []struct{ file, title string }{{"MEMORY.md", "Your notes"}, {"USER.md", "About the user"}} {
		if noUser && f.file == "USER.md" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(home, "memories", f.file))
		if err != nil || strings.TrimSpace(string(data)) == "" {
			continue
		}
		parts = append(parts, "### "+f.title+"\n"+strings.TrimSpace(string(data)))
	}
	return strings.Join(parts, "\n\n")
}
