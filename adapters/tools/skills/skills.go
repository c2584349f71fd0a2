// Package skills holds the agent's skills: SKILL.md files with YAML
// frontmatter (name, description; the agentskills.io format Hermes uses)
// under $HERMES_HOME/skills and ./.hermes/skills. The model lists them,
// views one before following it, and writes its own with skill_manage.
// With a Keeper, every skill of the home library is an event stream of its
// versions (skill-<name>: who wrote each, why) and its directory is a
// projection of it that never loses a hand edit (see keeper.go).
package skills

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hermes-go/hermes/actors/model"
	"github.com/hermes-go/hermes/actors/tool"
	"github.com/hermes-go/hermes/schema"
)

// Skill is one parsed SKILL.md.
type Skill struct {
	Name        string         `yaml:"name"`
	Description string         `yaml:"description"`
	Meta        map[string]any `yaml:",inline"`
	Body        string         `yaml:"-"`
	Path        string         `yaml:"-"`
}

// Parse reads SKILL.md text.
func Parse(text string) (Skill, error) {
	var s Skill
	text = strings.ReplaceAll(text, "\r\n", "\n") // a file saved on Windows
	rest, ok := strings.CutPrefix(strings.TrimLeft(text, "\ufeff"), "---\n")
	if !ok {
		return s, errors.New("SKILL.md must start with a --- frontmatter block")
	}
	front, body, ok := strings.Cut(rest, "\n---")
	if !ok {
		return s, errors.New("the frontmatter block is not closed by ---")
	}
	if err := yaml.Unmarshal([]byte(front), &s); err != nil {
		return s, fmt.Errorf("frontmatter: %v", err)
	}
	if !validName.MatchString(s.Name) {
		return s, fmt.Errorf("name %q: use lowercase letters, digits and hyphens (at most 64)", s.Name)
	}
	if strings.TrimSpace(s.Description) == "" {
		return s, errors.New("description is required: it is what the model sees in the index")
	}
	s.Body = strings.TrimLeft(strings.TrimPrefix(body, "\n"), "\n")
	if i := strings.IndexByte(s.Body, '\n'); i >= 0 && strings.TrimSpace(s.Body[:i]) == "" {
		s.Body = s.Body[i+1:]
	}
	return s, nil
}

// validName is the Python Hermes Agent's rule for skill names (lowercase
// letters, digits, hyphens, dots and underscores, at most 64), so that
// every skill it wrote loads here.
var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// Library is the set of skill directories, first one wins on a name clash
// (the project's ./.hermes/skills before the user's).
type Library struct {
	// Dirs are searched in order; Dirs[len-1] ($HERMES_HOME/skills) is
	// where skill_manage writes.
	Dirs []string
	// Keeper, when set, keeps the home library's skills as events
	// (skill_manage appends them, and the directories are their
	// projection); without it skill_manage writes the files alone.
	Keeper *Keeper
	// Where, when set, is where the process runs: skills_list leaves out
	// the skills not offered there (see Where.Excluded).
	Where *Where
}

func (l Library) home() string { return l.Dirs[len(l.Dirs)-1] }

// dirOf is the directory of the home library's skill name: where its
// SKILL.md is, at any depth (the Python agent files skills under category
// directories, skills/devops/deploy-check), else home/name for a new one.
func (l Library) dirOf(name string) string {
	if dir, ok := l.find(name); ok {
		return dir
	}
	return filepath.Join(l.home(), name)
}

// find is the directory of the home library's skill name, at any depth.
func (l Library) find(name string) (string, bool) {
	found := ""
	filepath.WalkDir(l.home(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != l.home() && hiddenDir(d.Name()) {
			return filepath.SkipDir
		}
		if err != nil || found != "" || d.IsDir() || d.Name() != "SKILL.md" {
			return nil
		}
		if data, err := os.ReadFile(p); err == nil {
			if s, err := Parse(string(data)); err == nil && s.Name == name {
				found = filepath.Dir(p)
				return filepath.SkipAll
			}
		}
		return nil
	})
	return found, found != ""
}

// All lists every valid skill; broken files are reported in errs.
func (l Library) All() ([]Skill, []error) {
	seen := map[string]bool{}
	var out []Skill
	var errs []error
	for _, dir := range l.Dirs {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && p != dir && hiddenDir(d.Name()) {
				return filepath.SkipDir
			}
			if err != nil || d.IsDir() || d.Name() != "SKILL.md" {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				errs = append(errs, err)
				return nil
			}
			s, err := Parse(string(data))
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p, err))
				return nil
			}
			if !seen[s.Name] {
				seen[s.Name] = true
				s.Path = p
				out = append(out, s)
			}
			return nil
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errs
}

// hiddenDir says whether a directory of that name holds no skills to list:
// hidden ones (the Python agent keeps its skills hub state, archives and
// backups in .hub, .archive, .curator_backups, ...) and those of tools.
func hiddenDir(name string) bool {
	return strings.HasPrefix(name, ".") || slices.Contains([]string{"venv", "node_modules", "site-packages", "__pycache__"}, name)
}

// Get finds one skill by name.
func (l Library) Get(name string) (Skill, error) {
	all, _ := l.All()
	var names []string
	for _, s := range all {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return Skill{}, fmt.Errorf("no skill %q (have: %s)", name, strings.Join(names, ", "))
}

// Install copies a skill directory (or a SKILL.md) into the home library.
func (l Library) Install(src string) (Skill, error) { return l.install(src, false) }

// Reinstall is Install that replaces an installed skill of the same name.
func (l Library) Reinstall(src string) (Skill, error) { return l.install(src, true) }

// ErrSkillExists is returned by Install when a skill of that name is
// installed already.
var ErrSkillExists = errors.New("a skill of that name is installed")

func (l Library) install(src string, replace bool) (Skill, error) {
	info, err := os.Stat(src)
	if err != nil {
		return Skill{}, err
	}
	dir := src
	if !info.IsDir() {
		dir = filepath.Dir(src)
	}
	data, err := os.ReadFile(filepath.Join(dir, "SKILL.md"))
	if err != nil {
		return Skill{}, fmt.Errorf("%s holds no SKILL.md: %w", dir, err)
	}
	s, err := Parse(string(data))
	if err != nil {
		return Skill{}, err
	}
	dst := l.dirOf(s.Name)
	if _, err := os.Stat(dst); err == nil {
		if !replace {
			return Skill{}, fmt.Errorf("%w: %s (use --force to replace it)", ErrSkillExists, dst)
		}
		if err := os.RemoveAll(dst); err != nil {
			return Skill{}, err
		}
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	s.Path = filepath.Join(dst, "SKILL.md")
	return s, err
}

// ImportTree copies the skills under src (another home's skills/
// directory: every directory holding a SKILL.md, at any depth) into the
// home library, at the same place under it (categories kept). A skill
// whose name the home library has already, or whose place is taken, is
// skipped: nothing there is replaced. It returns the names imported and
// skipped; a SKILL.md that does not parse is skipped and named in errs.
func (l Library) ImportTree(src string) (imported, skipped []string, errs []error) {
	home := Library{Dirs: []string{l.home()}}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		if p != src && hiddenDir(d.Name()) {
			return filepath.SkipDir
		}
		data, err := os.ReadFile(filepath.Join(p, "SKILL.md"))
		if err != nil {
			return nil
		}
		s, err := Parse(string(data))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", filepath.Join(p, "SKILL.md"), err))
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(l.home(), rel)
		if _, err := home.Get(s.Name); err == nil {
			skipped = append(skipped, s.Name)
			return filepath.SkipDir
		}
		if _, err := os.Lstat(dst); err == nil {
			skipped = append(skipped, s.Name)
			return filepath.SkipDir
		}
		if err := copyTree(p, dst); err != nil {
			errs = append(errs, fmt.Errorf("copy skill %s: %w", s.Name, err))
			return filepath.SkipDir
		}
		imported = append(imported, s.Name)
		return filepath.SkipDir
	})
	if err != nil {
		errs = append(errs, err)
	}
	return imported, skipped, errs
}

// copyTree copies the directory src to dst (which must not exist),
// regular files and directories only.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, 0o644)
		}
		return nil
	})
}

// Tools returns skills_list, skill_view and skill_manage.
func Tools(l Library) []tool.Tool {
	return []tool.Tool{listTool{l}, viewTool{l}, manageTool{l}}
}

type listTool struct{ l Library }

func (listTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "skills_list", Description: "List the available skills (name, category and description); category narrows the list to one category.",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"category": map[string]any{"type": "string", "description": "only the skills of this category"}}}}
}
func (listTool) Flags() tool.Flags { return tool.Flags{ReadOnly: true} }
func (t listTool) Run(_ context.Context, args json.RawMessage) (string, error) {
	var a struct{ Category string }
	if len(args) > 0 {
		json.Unmarshal(args, &a)
	}
	all, _ := t.l.All()
	if t.l.Where != nil {
		all, _ = t.l.Offered(*t.l.Where)
	}
	if len(all) == 0 {
		return "no skills yet", nil
	}
	var b strings.Builder
	cats := map[string]bool{}
	for _, s := range all {
		cat := t.l.Category(s)
		cats[cat] = true
		if a.Category != "" && cat != a.Category {
			continue
		}
		if cat != "" {
			fmt.Fprintf(&b, "- [%s] %s: %s\n", cat, s.Name, s.Description)
		} else {
			fmt.Fprintf(&b, "- %s: %s\n", s.Name, s.Description)
		}
	}
	if b.Len() == 0 {
		delete(cats, "")
		names := make([]string, 0, len(cats))
		for c := range cats {
			names = append(names, c)
		}
		sort.Strings(names)
		return fmt.Sprintf("no skills in category %q (categories: %s)", a.Category, strings.Join(names, ", ")), nil
	}
	return b.String(), nil
}

type viewTool struct{ l Library }

func (viewTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "skill_view", Description: "Read a skill's full instructions before following it. The answer lists its linked files (references/, templates/, scripts/, assets/); read one with file_path.",
		Parameters: map[string]any{"type": "object", "required": []string{"name"}, "properties": map[string]any{
			"name":      map[string]any{"type": "string"},
			"file_path": map[string]any{"type": "string", "description": "a linked file of the skill, e.g. references/api.md"},
		}}}
}
func (viewTool) Flags() tool.Flags { return tool.Flags{ReadOnly: true} }
func (t viewTool) Run(_ context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Name     string
		FilePath string `json:"file_path"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return "", fmt.Errorf("invalid arguments: %v", err)
	}
	s, err := t.l.Get(a.Name)
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(s.Path)
	if a.FilePath != "" {
		rel := filepath.FromSlash(a.FilePath)
		if !filepath.IsLocal(rel) {
			return "", fmt.Errorf("file_path %q: give a path inside the skill's directory", a.FilePath)
		}
		data, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			return "", fmt.Errorf("file %q not found in skill %s (its files: %s)", a.FilePath, s.Name, strings.Join(linkedFiles(dir), ", "))
		}
		return string(data), nil
	}
	data, err := os.ReadFile(s.Path)
	if err != nil {
		return "", err
	}
	out := string(data)
	if files := linkedFiles(dir); len(files) > 0 {
		out += fmt.Sprintf("\n\n[linked files of %s: %s; read one with skill_view(name=%q, file_path=...)]", s.Name, strings.Join(files, ", "), s.Name)
	}
	return out, nil
}

type manageTool struct{ l Library }

func (manageTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "skill_manage", Description: "Save what you learned as a reusable skill. action=create with content (a whole SKILL.md: --- name, description --- then the steps) and optionally category (a directory to file it under, e.g. devops); action=edit with content to replace SKILL.md; action=patch with old_string and new_string; action=write_file with file_path (under references/, templates/, scripts/ or assets/) and file_content to add or replace a linked file; action=remove_file with file_path; action=delete. reason: why, kept in the skill's history.",
		Parameters: map[string]any{"type": "object", "required": []string{"action", "name"}, "properties": map[string]any{
			"action":       map[string]any{"type": "string", "enum": []string{"create", "edit", "patch", "delete", "write_file", "remove_file"}},
			"name":         map[string]any{"type": "string"},
			"content":      map[string]any{"type": "string"},
			"category":     map[string]any{"type": "string"},
			"old_string":   map[string]any{"type": "string"},
			"new_string":   map[string]any{"type": "string"},
			"file_path":    map[string]any{"type": "string"},
			"file_content": map[string]any{"type": "string"},
			"reason":       map[string]any{"type": "string"},
		}}}
}

func (t manageTool) Flags() tool.Flags {
	return tool.Flags{WritesPaths: func(args json.RawMessage) []string {
		var a struct{ Name string }
		json.Unmarshal(args, &a)
		return []string{t.l.dirOf(a.Name)}
	}}
}

func (t manageTool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	var a manageArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return "", fmt.Errorf("invalid arguments: %v", err)
	}
	if !validName.MatchString(a.Name) {
		return "", fmt.Errorf("name %q: use lowercase letters, digits and hyphens", a.Name)
	}
	if err := a.check(); err != nil {
		return "", err
	}
	if t.l.Keeper != nil {
		return t.keep(ctx, a)
	}
	if a.Action == "write_file" || a.Action == "remove_file" {
		return "", fmt.Errorf("action %s needs the skills kept as events (a home opened by hermes)", a.Action)
	}
	dir := t.l.dirOf(a.Name)
	if _, found := t.l.find(a.Name); !found && a.Category != "" {
		dir = filepath.Join(t.l.home(), filepath.FromSlash(a.Category), a.Name)
	}
	path := filepath.Join(dir, "SKILL.md")
	var content string
	switch a.Action {
	case "create":
		s, err := Parse(a.Content)
		if err != nil {
			return "", fmt.Errorf("content is not a valid SKILL.md: %w", err)
		}
		if s.Name != a.Name {
			return "", fmt.Errorf("the frontmatter names %q but name is %q", s.Name, a.Name)
		}
		if _, err := os.Stat(path); err == nil {
			return "", fmt.Errorf("skill %s exists; use action=patch to change it", a.Name)
		}
		content = a.Content
	case "patch":
		old, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("no skill %s in %s to patch", a.Name, t.l.home())
		}
		if n := bytes.Count(old, []byte(a.OldString)); a.OldString == "" || n != 1 {
			return "", fmt.Errorf("old_string must match exactly once in %s (matches %d)", a.Name, n)
		}
		content = strings.Replace(string(old), a.OldString, a.NewString, 1)
		if _, err := Parse(content); err != nil {
			return "", fmt.Errorf("the patch would break the skill: %w", err)
		}
	case "edit":
		s, err := Parse(a.Content)
		if err != nil {
			return "", fmt.Errorf("content is not a valid SKILL.md: %w", err)
		}
		if s.Name != a.Name {
			return "", fmt.Errorf("the frontmatter names %q but name is %q", s.Name, a.Name)
		}
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("no skill %s in %s to edit", a.Name, t.l.home())
		}
		content = a.Content
	case "delete":
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("no skill %s in %s", a.Name, t.l.home())
		}
	default:
		return "", fmt.Errorf("action must be create, patch or delete, not %q", a.Action)
	}
	env := tool.EnvFrom(ctx)
	if env.Record != nil {
		if err := env.Record(ctx, schema.SkillWritten{Name: a.Name, Action: a.Action, Content: content}); err != nil {
			return "", err
		}
	}
	if a.Action == "delete" {
		if err := os.RemoveAll(dir); err != nil {
			return "", err
		}
		return "deleted skill " + a.Name, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s skill %s (%s)", map[string]string{"create": "created", "edit": "edited", "patch": "patched"}[a.Action], a.Name, path), nil
}
