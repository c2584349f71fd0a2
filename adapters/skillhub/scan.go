package skillhub

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hermes-go/hermes/adapters/tools/skills"
)

// Severities of a Finding, worst first.
const (
	High   = "high"
	Medium = "medium"
	Low    = "low"
)

// Finding is one thing a scan found in a skill that a person should see
// before the agent uses it.
type Finding struct {
	Severity string
	// Category: script, command, exfiltration, injection, hidden-text,
	// binary, toolsets.
	Category string
	// File and Line say where ("" and 0: the skill as a whole).
	File string
	Line int
	What string
}

// String is the finding on one line.
func (f Finding) String() string {
	where := f.File
	if f.Line > 0 {
		where = fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	if where != "" {
		where = " " + where
	}
	return fmt.Sprintf("[%s] %s%s: %s", f.Severity, f.Category, where, f.What)
}

// Worst is the worst severity among fs ("" for none).
func Worst(fs []Finding) string {
	worst := ""
	for _, f := range fs {
		if rank(f.Severity) > rank(worst) {
			worst = f.Severity
		}
	}
	return worst
}

func rank(s string) int { return map[string]int{Low: 1, Medium: 2, High: 3}[s] }

type rule struct {
	severity, category, what string
	re                       *regexp.Regexp
	// scripts: the rule reads scripts and code blocks only; text: prose
	// only; both when neither is set.
	scripts, text bool
}

var rules = []rule{
	{severity: High, category: "command", what: "downloads code and runs it (curl/wget piped to a shell)", re: regexp.MustCompile(`(?i)\b(curl|wget)\b[^\n|]*\|\s*(sudo\s+)?(ba|z|da)?sh\b`)},
	{severity: High, category: "command", what: "runs code it decodes or downloads (eval/base64)", re: regexp.MustCompile(`(?i)(\beval\s+"?\$\((curl|wget)|base64\s+(-d|--decode)[^\n|]*\|\s*(ba)?sh\b)`)},
	{severity: High, category: "command", what: "deletes the home or root directory", re: regexp.MustCompile(`\brm\s+-[a-zA-Z]*r[a-zA-Z]*f?\s+(/|~|\$HOME)(\s|$|/\*)`)},
	{severity: High, category: "command", what: "opens a reverse shell", re: regexp.MustCompile(`(/dev/tcp/|\bnc\b[^\n]*\s-e\s|\bsocat\b[^\n]*exec:)`)},
	{severity: High, category: "exfiltration", what: "reads credentials (ssh keys, cloud credentials, shadow file)", re: regexp.MustCompile(`(~|\$HOME)/\.(ssh|aws|gnupg|kube)\b|\bid_(rsa|ed25519)\b|/etc/shadow|\.aws/credentials`)},
	{severity: High, category: "exfiltration", what: "sends a secret from the environment over the network", re: regexp.MustCompile(`(?i)\b(curl|wget|nc)\b[^\n]*\$\{?[A-Z0-9_]*(KEY|TOKEN|SECRET|PASSWORD)[A-Z0-9_]*`)},
	{severity: Medium, category: "command", what: "runs commands as root (sudo)", re: regexp.MustCompile(`\bsudo\s+\S`), scripts: true},
	{severity: Low, category: "command", what: "makes files writable by everyone (chmod 777)", re: regexp.MustCompile(`\bchmod\s+(-R\s+)?0?777\b`)},
	{severity: High, category: "injection", what: "tells the model to ignore its instructions", re: regexp.MustCompile(`(?i)\b(ignore|disregard|forget)\s+(all\s+|any\s+)?(of\s+)?(the\s+|your\s+)?(previous|prior|above|earlier|system)\s+(instructions|prompts?|rules|messages)`), text: true},
	{severity: High, category: "injection", what: "tells the model to hide what it does from the user", re: regexp.MustCompile(`(?i)\b(do\s+not|don't|never)\s+(tell|inform|show|mention\s+(this\s+)?to|reveal\s+(this\s+)?to)\s+the\s+user\b`), text: true},
	{severity: High, category: "injection", what: "tries to give the model a new identity or mode", re: regexp.MustCompile(`(?i)\byou\s+are\s+now\s+(in\s+)?(dan|developer\s+mode|jailbroken|unrestricted|an?\s+unfiltered)`), text: true},
	{severity: Medium, category: "injection", what: "asks for the system prompt or hidden instructions", re: regexp.MustCompile(`(?i)\b(reveal|print|repeat|output)\s+(your|the)\s+(system\s+prompt|hidden\s+instructions)`), text: true},
	{severity: Medium, category: "injection", what: "an HTML comment the user does not see speaks to the model", re: regexp.MustCompile(`(?is)<!--[^>]*\b(assistant|ai|model|llm|instructions?|ignore)\b[^>]*-->`), text: true},
}

// invisible are characters a reader does not see that a model reads: zero
// widths, bidirectional overrides, Unicode tag characters.
func invisible(r rune) bool {
	return (r >= 0x200b && r <= 0x200f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0xfeff || (r >= 0xe0000 && r <= 0xe007f)
}

var scriptExt = []string{".sh", ".bash", ".zsh", ".py", ".js", ".mjs", ".ts", ".rb", ".pl", ".php", ".ps1", ".bat", ".cmd", ".lua"}

// Scan looks through a skill's files for what a person should see before
// the agent uses it: the scripts it ships, dangerous commands, reads of
// credentials, prompt-injection phrases and invisible text, binary files,
// and the toolsets it asks for.
func Scan(files skills.Snapshot) []Finding {
	var out []Finding
	for _, p := range files.Paths() {
		f := files[p]
		if !f.Kept() {
			out = append(out, Finding{Severity: Medium, Category: "binary", File: p, What: fmt.Sprintf("%d bytes not read by the scan", f.Size)})
			continue
		}
		text := string(f.Data)
		if !utf8.Valid(f.Data) || strings.ContainsRune(text, 0) {
			out = append(out, Finding{Severity: Medium, Category: "binary", File: p, What: "a binary file (not read by the scan)"})
			continue
		}
		script := f.Mode&0o111 != 0 || strings.HasPrefix(text, "#!") || slices.Contains(scriptExt, strings.ToLower(path.Ext(p)))
		if script {
			what := "ships a script the agent may run"
			if f.Mode&0o111 != 0 {
				what = "ships an executable script the agent may run"
			}
			out = append(out, Finding{Severity: Medium, Category: "script", File: p, What: what})
		}
		inCode := false
		seen := map[string]bool{}
		for i, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inCode = !inCode
			}
			code := script || inCode || strings.HasPrefix(line, "    ") || strings.Contains(line, "`")
			for _, r := range rules {
				if (r.scripts && !code) || (r.text && script) || seen[r.what] || !r.re.MatchString(line) {
					continue
				}
				seen[r.what] = true
				out = append(out, Finding{Severity: r.severity, Category: r.category, File: p, Line: i + 1, What: r.what})
			}
			if !seen["invisible"] && strings.IndexFunc(line, invisible) >= 0 {
				seen["invisible"] = true
				out = append(out, Finding{Severity: High, Category: "hidden-text", File: p, Line: i + 1, What: "invisible characters (zero-width, bidirectional or tag) a reader does not see but the model reads"})
			}
		}
		// An HTML comment across lines.
		for _, r := range rules {
			if r.category == "injection" && strings.Contains(r.what, "HTML comment") && !seen[r.what] && r.re.MatchString(text) {
				out = append(out, Finding{Severity: r.severity, Category: r.category, File: p, Line: strings.Count(text[:r.re.FindStringIndex(text)[0]], "\n") + 1, What: r.what})
			}
		}
	}
	if s, err := skills.Parse(files.SkillMD()); err == nil {
		if ts := requested(s.Meta); len(ts) > 0 {
			out = append(out, Finding{Severity: Low, Category: "toolsets", File: "SKILL.md", What: "asks for toolsets/tools: " + strings.Join(ts, ", ")})
		}
	}
	slices.SortStableFunc(out, func(a, b Finding) int { return rank(b.Severity) - rank(a.Severity) })
	return out
}

// requested are the toolsets and tools a skill's frontmatter asks for:
// allowed-tools (the Agent Skills field), requires_toolsets and
// requires_tools (top level or under metadata.hermes, as the Python agent
// reads them).
func requested(meta map[string]any) []string {
	var out []string
	add := func(v any) {
		switch x := v.(type) {
		case string:
			for _, f := range strings.FieldsFunc(x, func(r rune) bool { return r == ',' || r == ' ' }) {
				out = append(out, f)
			}
		case []any:
			for _, e := range x {
				out = append(out, fmt.Sprint(e))
			}
		}
	}
	keys := []string{"allowed-tools", "allowed_tools", "requires_toolsets", "requires_tools"}
	for _, k := range keys {
		add(meta[k])
	}
	if m, ok := meta["metadata"].(map[string]any); ok {
		if h, ok := m["hermes"].(map[string]any); ok {
			for _, k := range keys {
				add(h[k])
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
