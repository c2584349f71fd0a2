package compress

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/schema"
)

const summaryPrompt = `You compress the middle of a conversation between a user and an AI agent that uses tools, so that the agent can continue the work without it. Today is %s.

Write a summary with exactly these sections (write "none" where a section is empty):
## Goal
## Constraints and preferences
## Completed actions (name the tools used and what they showed)
## Active state (what is running, open, half-done)
## Decisions made (and why)
## Files touched (paths)
## Remaining work
## Pending user requests

Be specific: keep names, paths, numbers, commands and error messages that matter. Never copy secrets (keys, tokens, passwords): write [REDACTED]. Do not invent anything. Do not answer the user.`

var secretRes = []*regexp.Regexp{
	regexp.MustCompile(`\bsk-(ant-)?[A-Za-z0-9_-]{16,}`),
	regexp.MustCompile(`\bAKIA[0-9A-Z]{16}\b`),
	regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{30,}`),
	regexp.MustCompile(`(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----`),
	regexp.MustCompile(`(?i)\b(password|passwd|secret|api[_-]?key|token)(\s*[:=]\s*)\S+`),
}

// Redact removes secrets from text sent to the summariser.
func Redact(s string) string {
	for i, re := range secretRes {
		if i == len(secretRes)-1 {
			s = re.ReplaceAllString(s, "$1$2[REDACTED]")
			continue
		}
		s = re.ReplaceAllString(s, "[REDACTED]")
	}
	return s
}

// Render writes messages as a plain transcript for the summariser.
func Render(msgs []schema.Message, maxChars int) string {
	var b strings.Builder
	for _, m := range msgs {
		switch m.Role {
		case "tool":
			fmt.Fprintf(&b, "TOOL RESULT (%s): %s\n", m.Name, clip(m.Content, 2000))
		case "assistant":
			if m.Content != "" {
				fmt.Fprintf(&b, "ASSISTANT: %s\n", m.Content)
			}
			for _, tc := range m.ToolCalls {
				fmt.Fprintf(&b, "ASSISTANT CALLS %s(%s)\n", tc.Function.Name, clip(tc.Function.Arguments, 500))
			}
		default:
			fmt.Fprintf(&b, "%s: %s\n", strings.ToUpper(m.Role), m.Content)
		}
	}
	text := Redact(b.String())
	if len(text) > maxChars {
		// Keep the start and the end: the goal and the latest state.
		half := maxChars / 2
		text = text[:half] + "\n[… middle of the transcript cut …]\n" + text[len(text)-half:]
	}
	return text
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Summarizer asks the auxiliary model for the structured summary.
type Summarizer struct {
	Provider model.Provider
	Model    string
	Now      func() time.Time
	// MaxInput bounds the transcript sent, in characters.
	MaxInput int
}

// Summarize returns the summary of middle, updating previous when set.
func (s Summarizer) Summarize(ctx context.Context, previous string, middle []schema.Message) (string, model.Response, error) {
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	max := s.MaxInput
	if max <= 0 {
		max = 200_000
	}
	var user strings.Builder
	if previous != "" {
		user.WriteString("An earlier summary of the conversation before this part; update it with the transcript below:\n\n")
		user.WriteString(Redact(previous))
		user.WriteString("\n\n")
	}
	user.WriteString("Transcript to compress:\n\n")
	user.WriteString(Render(middle, max))
	req := model.Request{Model: s.Model, System: fmt.Sprintf(summaryPrompt, now.Format("2 January 2006")),
		Messages: []schema.Message{{Role: "user", Content: user.String()}}, MaxTokens: 4000, NoTools: true}
	resp, err := s.Provider.Complete(ctx, req, func(model.Delta) {})
	if err != nil {
		return "", resp, err
	}
	text := strings.TrimSpace(resp.Content)
	if text == "" {
		return "", resp, fmt.Errorf("the summariser returned nothing")
	}
	return Redact(text), resp, nil
}

var pathRe = regexp.MustCompile(`(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]+\.\w{1,8}\b`)

// Fallback is the bounded deterministic summary used when the auxiliary
// model fails: the files mentioned, the tools used, and the last turns
// that were dropped.
func Fallback(previous string, middle []schema.Message) string {
	files := map[string]bool{}
	tools := map[string]int{}
	var texts []string
	for _, m := range middle {
		for _, p := range pathRe.FindAllString(m.Content, -1) {
			files[p] = true
		}
		for _, tc := range m.ToolCalls {
			tools[tc.Function.Name]++
			for _, p := range pathRe.FindAllString(tc.Function.Arguments, -1) {
				files[p] = true
			}
		}
		if (m.Role == "user" || m.Role == "assistant") && m.Content != "" {
			texts = append(texts, fmt.Sprintf("%s: %s", m.Role, clip(m.Content, 300)))
		}
	}
	var b strings.Builder
	b.WriteString("(Automatic summary: the summariser was unavailable.)\n")
	if previous != "" {
		fmt.Fprintf(&b, "Earlier summary:\n%s\n", clip(previous, 1500))
	}
	if len(files) > 0 {
		var fs []string
		for f := range files {
			fs = append(fs, f)
		}
		sort.Strings(fs)
		if len(fs) > 30 {
			fs = fs[:30]
		}
		fmt.Fprintf(&b, "Files mentioned: %s\n", strings.Join(fs, ", "))
	}
	if len(tools) > 0 {
		var ts []string
		for name, n := range tools {
			ts = append(ts, fmt.Sprintf("%s×%d", name, n))
		}
		sort.Strings(ts)
		fmt.Fprintf(&b, "Tools used: %s\n", strings.Join(ts, ", "))
	}
	if n := len(texts); n > 0 {
		b.WriteString("Last dropped turns:\n")
		for _, t := range texts[max(0, n-4):] {
			b.WriteString("- " + t + "\n")
		}
	}
	return Redact(b.String())
}

// Cooldown remembers that the summariser failed, so that compressions in
// the next minutes use the deterministic summary instead of waiting on it
// again. One is shared by every session of a process.
type Cooldown struct {
	mu    sync.Mutex
	until time.Time
}

// Active reports whether the summariser should be skipped now.
func (c *Cooldown) Active() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Before(c.until)
}

// Start skips the summariser for d.
func (c *Cooldown) Start(d time.Duration) {
	c.mu.Lock()
	c.until = time.Now().Add(d)
	c.mu.Unlock()
}
