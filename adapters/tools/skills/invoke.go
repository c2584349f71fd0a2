package skills

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// How /<name> loads skills into a turn, as the Python Hermes Agent does:
// the person's message becomes one that says the skill was invoked, holds
// its instructions (template variables filled in), its directory, its
// settings from config.yaml and its linked files, then what the person
// typed after the name. Several leading names (/a /b do this) load each
// (up to five), and a bundle ($HERMES_HOME/skill-bundles/<name>.yaml:
// name, description, skills, instruction) loads its skills under one
// name; a bundle wins over a skill of the same name. The names loaded go
// with the turn's user message (UserMessageAdded.Skills), where the
// curator counts them as uses.

// maxStacked is how many leading /names one message loads.
const maxStacked = 5

// Invocation is the message a /<name> turn sends and the skills it loads.
type Invocation struct {
	// Text is the user message the model gets.
	Text string
	// Skills are the skills loaded, Missing those a bundle names that are
	// not there or not offered here.
	Skills, Missing []string
	// Bundle names the bundle invoked, if one was.
	Bundle string
}

// ErrNoSkill is a /<name> that names no skill and no bundle: the caller
// says it is an unknown command.
var ErrNoSkill = errors.New("no skill or bundle of that name")

// ExcludedError is a /<name> that names a skill not offered where the
// chat runs.
type ExcludedError struct {
	Name, Why string
}

// Error says which skill and why.
func (e *ExcludedError) Error() string {
	return fmt.Sprintf("skill %s is not offered here: %s", e.Name, e.Why)
}

// Bundle is a skill bundle: skills loaded together under one /name.
type Bundle struct {
	Name, Description, Instruction string
	Skills                         []string
	Path                           string
}

// slug is the command name of a skill or bundle name, as upstream makes
// it: lowercase, spaces and underscores as hyphens, other characters
// dropped.
func slug(name string) string {
	s := strings.NewReplacer(" ", "-", "_", "-").Replace(strings.ToLower(name))
	s = slugDrop.ReplaceAllString(s, "")
	s = slugHyphens.ReplaceAllString(s, "-")
	return strings.Trim(s, "-")
}

var (
	slugDrop    = regexp.MustCompile(`[^a-z0-9-]`)
	slugHyphens = regexp.MustCompile(`-{2,}`)
)

// Bundles reads the bundles in dir ($HERMES_HOME/skill-bundles), by their
// command name; files that do not parse or name no skills are in errs.
func Bundles(dir string) (map[string]Bundle, []error) {
	out := map[string]Bundle{}
	var errs []error
	var files []string
	for _, pat := range []string{"*.yaml", "*.yml"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		files = append(files, m...)
	}
	sort.Strings(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var raw struct {
			Name        string   `yaml:"name"`
			Description string   `yaml:"description"`
			Skills      []string `yaml:"skills"`
			Instruction string   `yaml:"instruction"`
		}
		if err := yaml.Unmarshal(data, &raw); err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", f, err))
			continue
		}
		b := Bundle{Name: strings.TrimSpace(raw.Name), Description: strings.TrimSpace(raw.Description), Instruction: strings.TrimSpace(raw.Instruction), Path: f}
		if b.Name == "" {
			b.Name = strings.TrimSuffix(strings.TrimSuffix(filepath.Base(f), ".yaml"), ".yml")
		}
		for _, s := range raw.Skills {
			if s = strings.TrimSpace(s); s != "" {
				b.Skills = append(b.Skills, s)
			}
		}
		key := slug(b.Name)
		if len(b.Skills) == 0 || key == "" {
			errs = append(errs, fmt.Errorf("%s: a bundle needs a name and a list of skills", f))
			continue
		}
		if _, dup := out[key]; dup {
			errs = append(errs, fmt.Errorf("%s: bundle %s is defined already", f, key))
			continue
		}
		out[key] = b
	}
	return out, errs
}

// Invoker builds the messages of /<name> for a library.
type Invoker struct {
	Library Library
	// BundlesDir is $HERMES_HOME/skill-bundles.
	BundlesDir string
	// Config is config.yaml's skills.config (the skills' settings).
	Config map[string]any
}

// lookup finds the skill offered at w whose command name is name.
func (in Invoker) lookup(w Where, name string) (Skill, error) {
	want := slug(name)
	all, _ := in.Library.All()
	for _, s := range all {
		if slug(s.Name) != want {
			continue
		}
		if why := w.Excluded(s); why != "" {
			return s, &ExcludedError{Name: s.Name, Why: why}
		}
		return s, nil
	}
	return Skill{}, ErrNoSkill
}

// Invoke builds the message of "/name arg" typed at w, in session
// sessionID: a bundle of that name, else the skill, with any further
// leading /names loaded too. It returns ErrNoSkill when name is neither,
// and an *ExcludedError when the skill is not offered at w.
func (in Invoker) Invoke(w Where, sessionID, name, arg string) (Invocation, error) {
	bundles, _ := Bundles(in.BundlesDir)
	if b, ok := bundles[slug(name)]; ok {
		return in.bundle(w, sessionID, b, arg), nil
	}
	first, err := in.lookup(w, name)
	if err != nil {
		return Invocation{}, err
	}
	loaded := []Skill{first}
	rest := strings.TrimSpace(arg)
	for len(loaded) < maxStacked && strings.HasPrefix(rest, "/") {
		word, tail, _ := strings.Cut(rest, " ")
		s, err := in.lookup(w, strings.TrimPrefix(word, "/"))
		if err != nil || slicesHas(loaded, s.Name) {
			break
		}
		loaded = append(loaded, s)
		rest = strings.TrimSpace(tail)
	}
	if len(loaded) == 1 {
		note := fmt.Sprintf("[IMPORTANT: The user has invoked the %q skill, indicating they want you to follow its instructions. The full skill content is loaded below.]", first.Name)
		text := in.block(first, note, sessionID)
		if rest != "" {
			text += "\n\nThe user has provided the following instruction alongside the skill invocation: " + rest
		}
		return Invocation{Text: text, Skills: []string{first.Name}}, nil
	}
	var names, typed []string
	var blocks []string
	for _, s := range loaded {
		names = append(names, s.Name)
		typed = append(typed, "/"+slug(s.Name))
		blocks = append(blocks, in.block(s, fmt.Sprintf("[Loaded as part of the stacked skill invocation %q.]", s.Name), sessionID))
	}
	head := []string{fmt.Sprintf("[IMPORTANT: The user has invoked the %q stacked skill bundle, loading %d skills together. Treat every skill below as active guidance for this turn.]", strings.Join(typed, " "), len(loaded)),
		"", "Skills loaded: " + strings.Join(names, ", ")}
	if rest != "" {
		head = append(head, "", "User instruction: "+rest)
	}
	return Invocation{Text: strings.Join(append([]string{strings.Join(head, "\n")}, blocks...), "\n\n"), Skills: names}, nil
}

func slicesHas(ss []Skill, name string) bool {
	for _, s := range ss {
		if s.Name == name {
			return true
		}
	}
	return false
}

// bundle builds the message of bundle b: its skills offered at w, the
// others named as skipped.
func (in Invoker) bundle(w Where, sessionID string, b Bundle, arg string) Invocation {
	inv := Invocation{Bundle: b.Name}
	var blocks []string
	seen := map[string]bool{}
	for _, name := range b.Skills {
		if seen[name] {
			continue
		}
		seen[name] = true
		s, err := in.lookup(w, name)
		if err != nil {
			inv.Missing = append(inv.Missing, name)
			continue
		}
		inv.Skills = append(inv.Skills, s.Name)
		blocks = append(blocks, in.block(s, fmt.Sprintf("[Loaded as part of the %q skill bundle.]", b.Name), sessionID))
	}
	head := []string{fmt.Sprintf("[IMPORTANT: The user has invoked the %q skill bundle, loading %d skills together. Treat every skill below as active guidance for this turn.]", b.Name, len(inv.Skills)),
		"", "Bundle: " + b.Name, "Skills loaded: " + strings.Join(inv.Skills, ", ")}
	if len(inv.Missing) > 0 {
		head = append(head, "Skills missing or not offered here (skipped): "+strings.Join(inv.Missing, ", "))
	}
	if b.Instruction != "" {
		head = append(head, "", "Bundle instruction: "+b.Instruction)
	}
	if arg = strings.TrimSpace(arg); arg != "" {
		head = append(head, "", "User instruction: "+arg)
	}
	inv.Text = strings.Join(append([]string{strings.Join(head, "\n")}, blocks...), "\n\n")
	return inv
}

// block is one skill as a message holds it: the note, its instructions,
// its directory, its settings and its linked files.
func (in Invoker) block(s Skill, note, sessionID string) string {
	dir := filepath.Dir(s.Path)
	body := strings.ReplaceAll(s.Body, "${HERMES_SKILL_DIR}", dir)
	if sessionID != "" {
		body = strings.ReplaceAll(body, "${HERMES_SESSION_ID}", sessionID)
	}
	parts := []string{note, "", strings.TrimSpace(body), "",
		fmt.Sprintf("[Skill directory: %s]", dir),
		"Resolve any relative paths in this skill (scripts/..., templates/...) against that directory, and run its scripts with the terminal tool by their absolute path."}
	if vars := s.ConfigVars(); len(vars) > 0 {
		vals := s.ConfigValues(in.Config)
		parts = append(parts, "", "[Skill config (skills.config in config.yaml):")
		for _, v := range vars {
			val := fmt.Sprint(vals[v.Key])
			if val == "" {
				val = "(not set)"
			}
			parts = append(parts, fmt.Sprintf("  %s = %s", v.Key, val))
		}
		parts = append(parts, "]")
	}
	if files := linkedFiles(dir); len(files) > 0 {
		parts = append(parts, "", "[This skill has supporting files:]")
		for _, f := range files {
			parts = append(parts, fmt.Sprintf("- %s  ->  %s", f, filepath.Join(dir, f)))
		}
		parts = append(parts, fmt.Sprintf("\nRead any of them with skill_view(name=%q, file_path=\"<path>\"), or run scripts by their absolute path.", s.Name))
	}
	return strings.Join(parts, "\n")
}

// linkDirs are the directories of a skill that hold its linked files.
var linkDirs = []string{"references", "templates", "scripts", "assets"}

// linkedFiles lists the files under dir's linked-file directories,
// slash-separated relative paths, sorted.
func linkedFiles(dir string) []string {
	var out []string
	for _, sub := range linkDirs {
		root := filepath.Join(dir, sub)
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() && p != root && hiddenDir(d.Name()) {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") {
				rel, _ := filepath.Rel(dir, p)
				out = append(out, filepath.ToSlash(rel))
			}
			return nil
		})
	}
	sort.Strings(out)
	return out
}
